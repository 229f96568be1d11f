//go:build linux

package child

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Supervise's events, one at a time: each test drives a supervisor's
// event methods itself, in the order the dispatch loop would, on a real
// command in a real process group (started by Start, with its watcher),
// and looks at what the group got.

// supervised starts script (sh -c) with $D set to a directory of its own,
// and returns the process, a supervisor for it and the directory. The
// group is killed and the run ended when the test ends.
func supervised(t *testing.T, script string, c Control) (*Process, *supervisor, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := Start(Spec{Args: []string{"sh", "-c", script}, Env: []string{"D=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	s := newSupervisor(p, c)
	t.Cleanup(func() {
		s.close()
		p.signalGroup(syscall.SIGKILL)
		p.signalGroup(syscall.SIGCONT)
		p.Supervise(Control{KillGrace: time.Second})
	})
	return p, s, dir
}

// trapping is a script that logs each of the signals named (one line each
// to $D/log), says it started ($D/started), and runs until killed.
func trapping(sigs ...string) string {
	var b strings.Builder
	for _, s := range sigs {
		b.WriteString(`trap "echo ` + s + ` >> \"$D/log\"" ` + s + "\n")
	}
	b.WriteString(`touch "$D/started"; while :; do sleep 0.01; done`)
	return b.String()
}

func logged(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	return strings.Fields(string(b))
}

func waitLogged(t *testing.T, dir, sig string) {
	t.Helper()
	waitFor(t, "the command to log "+sig, func() bool {
		for _, l := range logged(dir) {
			if l == sig {
				return true
			}
		}
		return false
	})
}

func waitStarted(t *testing.T, dir string) {
	t.Helper()
	waitFor(t, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
}

// exited waits for the leader's end and returns its status.
func exited(t *testing.T, p *Process) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not end within 20s")
		return 0
	}
}

// within fails unless at lies in [lo, hi].
func within(t *testing.T, what string, at, lo, hi time.Time) {
	t.Helper()
	if at.Before(lo) || at.After(hi) {
		t.Errorf("%s at %s, want within [%s, %s]", what, at.Format(time.StampMicro), lo.Format(time.StampMicro), hi.Format(time.StampMicro))
	}
}

// A signal to distlock reaches the group; the second SIGINT or SIGTERM
// (counted together) is a SIGKILL.
func TestSuperviseForwardsSignalsSecondInterruptKills(t *testing.T) {
	p, s, dir := supervised(t, trapping("INT", "HUP", "TERM"), Control{KillGrace: time.Second})
	waitStarted(t, dir)
	s.signalled(syscall.SIGHUP)
	waitLogged(t, dir, "HUP")
	s.signalled(syscall.SIGINT)
	waitLogged(t, dir, "INT")
	s.signalled(syscall.SIGTERM) // the second interrupt: SIGKILL, not TERM
	if code := exited(t, p); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("the command's status after a second interrupt: %d, want %d (SIGKILL)", code, 128+int(syscall.SIGKILL))
	}
	for _, l := range logged(dir) {
		if l == "TERM" {
			t.Error("the second interrupt was forwarded as SIGTERM, not turned into SIGKILL")
		}
	}
}

// A Stop sends SIGTERM and sets the SIGKILL at its KillAt; a later Stop
// only brings the SIGKILL forward, never back, and a later loss of the
// lock is recorded without replacing the first reason. The kill timer
// then SIGKILLs the group.
func TestSuperviseStopTermsThenKillsAtEarliestKillAt(t *testing.T) {
	p, s, dir := supervised(t, trapping("TERM"), Control{KillGrace: time.Second})
	waitStarted(t, dir)
	maxHold := errors.New("max-hold")
	first := time.Now().Add(time.Hour)
	s.stopped(Stop{Reason: maxHold, KillAt: first})
	waitLogged(t, dir, "TERM")
	if s.out.Stopped == nil || s.out.Stopped.Reason != maxHold || !s.killAt.Equal(first) {
		t.Fatalf("after the first Stop: stopped %+v, kill at %s; want reason max-hold, kill at %s", s.out.Stopped, s.killAt, first)
	}
	s.stopped(Stop{Reason: errors.New("lost"), KillAt: first.Add(time.Hour), LockLost: true})
	if !s.killAt.Equal(first) {
		t.Errorf("a later Stop moved the SIGKILL back, to %s (was %s)", s.killAt, first)
	}
	if !s.out.Stopped.LockLost || s.out.Stopped.Reason != maxHold {
		t.Errorf("after a Stop that loses the lock: %+v; want LockLost, reason still max-hold", s.out.Stopped)
	}
	soon := time.Now().Add(50 * time.Millisecond)
	s.stopped(Stop{Reason: errors.New("lost again"), KillAt: soon, LockLost: true})
	if !s.killAt.Equal(soon) {
		t.Fatalf("an earlier KillAt did not bring the SIGKILL forward: %s, want %s", s.killAt, soon)
	}
	fired := <-s.killC
	within(t, "the kill timer", fired, soon, soon.Add(5*time.Second))
	s.killDue()
	if !s.killed || s.tick == nil {
		t.Errorf("after the kill timer: killed %v, polling %v", s.killed, s.tick != nil)
	}
	if code := exited(t, p); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("the command's status: %d, want %d (SIGKILL)", code, 128+int(syscall.SIGKILL))
	}
}

// When the leader exits with nothing left of its group, Supervise is done
// at once, with its status.
func TestSuperviseLeaderExitAloneEnds(t *testing.T) {
	p, s, _ := supervised(t, "exit 3", Control{KillGrace: time.Second})
	exited(t, p)
	if !s.leaderExited() {
		t.Fatal("the leader exited alone, yet the supervisor waits on")
	}
	if s.out.Code != 3 || s.leader != nil {
		t.Errorf("outcome %+v, leader %v; want code 3, no leader", s.out, s.leader)
	}
}

// When the leader exits leaving a grandchild that ignores SIGTERM in the
// group, the group gets SIGTERM and SIGKILL KillGrace later, and the
// supervisor waits on until the grandchild is gone: a grandchild never
// outlives the lock.
func TestSuperviseLeaderExitKillsWhatIsLeft(t *testing.T) {
	const grace = 300 * time.Millisecond
	// The grandchild writes its pid only once it ignores SIGTERM: with
	// the leader writing $! the SIGTERM could come before the trap.
	p, s, dir := supervised(t, `sh -c 'trap "" TERM; echo $$ > "$D/pid"; exec sleep 1000' & exit 4`, Control{KillGrace: grace})
	grandchild := readPIDFile(t, filepath.Join(dir, "pid"))
	exited(t, p)
	before := time.Now()
	if s.leaderExited() {
		t.Fatal("the supervisor was done with a grandchild still running")
	}
	after := time.Now()
	if s.out.Code != 4 {
		t.Errorf("outcome code %d, want the leader's 4", s.out.Code)
	}
	within(t, "the SIGKILL", s.killAt, before.Add(grace), after.Add(grace))
	if s.tick == nil {
		t.Fatal("the group is not polled after the leader's exit")
	}
	if s.polled() {
		t.Fatal("done while the grandchild (which ignores SIGTERM) runs")
	}
	<-s.killC
	if !running(grandchild) {
		t.Fatal("the grandchild died before the SIGKILL: did it not ignore SIGTERM?")
	}
	s.killDue()
	waitFor(t, "the supervisor to see the group gone", s.polled)
	if running(grandchild) {
		t.Error("the supervisor was done with the grandchild still running")
	}
}

// Job control: SIGTSTP to distlock stops the group, and distlock stops
// itself only once every process of it has stopped; continued, it asks
// Confirm, and continues the group only on nil.
func TestSuperviseSuspendsGroupBeforeItselfAndConfirms(t *testing.T) {
	confirm := make(chan error, 1)
	asked := 0
	p, s, dir := supervised(t, trapping(), Control{
		KillGrace: time.Second,
		Confirm:   func() <-chan error { asked++; return confirm },
	})
	waitStarted(t, dir)
	selfStopped := 0
	s.stopSelf = func() {
		selfStopped++
		if !p.allStopped(false) {
			t.Error("distlock stopped itself while processes of the command's group ran")
		}
	}
	s.jobSignal(syscall.SIGTSTP)
	if !s.stopping || s.tick == nil {
		t.Fatalf("after SIGTSTP: stopping %v, polling %v", s.stopping, s.tick != nil)
	}
	waitFor(t, "distlock to stop itself", func() bool { s.polled(); return selfStopped > 0 })
	if selfStopped != 1 || asked != 1 || s.confirming == nil || s.stopping {
		t.Fatalf("after the group stopped: distlock stopped %d times, Confirm asked %d times, confirming %v, stopping %v",
			selfStopped, asked, s.confirming != nil, s.stopping)
	}
	if !p.allStopped(false) {
		t.Fatal("the group was continued before Confirm answered")
	}
	// SIGCONT wakes a stopped process at once (kill(2) returns after it):
	// no wait is needed to see whether it was sent.
	s.confirmed(nil)
	if p.allStopped(false) {
		t.Fatal("Confirm said the lease is ours, yet the group was not continued")
	}
}

// Continued after the lease was lost: the group is never continued; the
// Stop that says so kills it where it stands.
func TestSuperviseLostWhileStoppedNeverContinues(t *testing.T) {
	confirm := make(chan error, 1)
	p, s, dir := supervised(t, trapping(), Control{
		KillGrace: time.Second,
		Confirm:   func() <-chan error { return confirm },
	})
	waitStarted(t, dir)
	s.stopSelf = func() {}
	s.jobSignal(syscall.SIGTSTP)
	waitFor(t, "the group to stop", func() bool { s.polled(); return s.confirming != nil })
	s.confirmed(errors.New("lost"))
	if !p.allStopped(false) {
		t.Fatal("the lease was lost, yet the group was continued")
	}
	// Stopped again, then a Stop: even a late nil from Confirm continues
	// nothing.
	s.confirming = confirm
	s.stopped(Stop{Reason: errors.New("lost"), KillAt: time.Now(), LockLost: true})
	s.confirmed(nil)
	if !p.allStopped(false) {
		t.Fatal("a Confirm answered after the Stop continued the group")
	}
	<-s.killC
	s.killDue()
	if code := exited(t, p); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("the command's status: %d, want %d (SIGKILL where it stood)", code, 128+int(syscall.SIGKILL))
	}
}

// SIGTSTP after a Stop, or after the leader's exit, stops nothing: the
// group is being ended.
func TestSuperviseNoSuspendOnceStopped(t *testing.T) {
	_, s, dir := supervised(t, trapping("TERM"), Control{KillGrace: time.Second})
	waitStarted(t, dir)
	s.stopped(Stop{Reason: errors.New("max-hold"), KillAt: time.Now().Add(time.Hour)})
	s.jobSignal(syscall.SIGTSTP)
	if s.stopping {
		t.Fatal("SIGTSTP after a Stop began stopping the group")
	}
}
