//go:build linux

package child

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// untrustedProc has the group check run as if /proc were another pid
// namespace's, until the test ends.
func untrustedProc(t *testing.T) {
	was := procTrusted
	procTrusted = func() bool { return false }
	t.Cleanup(func() { procTrusted = was })
}

// Without a /proc to trust, the command's end is not the group's: a
// process it leaves in the background (distlock's child once the command
// has exited) gets SIGTERM, and Supervise returns once it has ended, not
// before.
func TestWithoutProcSuperviseWaitsForLeftChild(t *testing.T) {
	untrustedProc(t)
	dir := t.TempDir()
	bg := filepath.Join(dir, "bg")
	// It dies of the SIGTERM only once "go" exists: until then Supervise
	// must wait for it.
	script := `(trap 'until [ -e "$0/go" ]; do sleep 0.01; done; exit 0' TERM; while :; do sleep 0.01; done) >/dev/null 2>&1 & echo $! > "$0/bg.tmp"; mv "$0/bg.tmp" "$0/bg"`
	p, err := Start(Spec{Args: []string{"sh", "-c", script, dir}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Outcome, 1)
	returned := false
	t.Cleanup(func() {
		if !returned {
			p.signalGroup(syscall.SIGKILL)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("Supervise has not returned 10 s after the group's SIGKILL")
			}
		}
	})
	pid := readPIDFile(t, bg)
	go func() { done <- p.Supervise(Control{KillGrace: 20 * time.Second}) }()
	select {
	case <-done:
		returned = true
		t.Fatal("Supervise returned while the command's background process ran")
	case <-time.After(300 * time.Millisecond):
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		returned = true
	case <-time.After(10 * time.Second):
		t.Fatal("Supervise has not returned 10 s after the background process was let end")
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("kill(%d, 0) = %v once Supervise returned: the background process is not gone (reaped)", pid, err)
	}
}

// Job control without a /proc to trust: SIGTSTP to distlock stops the
// whole group (SIGSTOP for what ignores SIGTSTP: here a background loop),
// and distlock stops itself only then; continued, the group runs again,
// and a second SIGTSTP stops it again.
func TestWithoutProcSuspendStopsGroup(t *testing.T) {
	untrustedProc(t)
	confirm := make(chan error, 1)
	script := `(trap '' TSTP; while :; do sleep 0.01; done) & echo $! > "$D/bg"; touch "$D/started"; while :; do sleep 0.01; done`
	p, s, dir := supervised(t, script, Control{
		KillGrace: time.Second,
		Confirm:   func() <-chan error { return confirm },
	})
	waitStarted(t, dir)
	bg := readPIDFile(t, filepath.Join(dir, "bg"))
	// stopped: read from the real /proc, which this test has. A shell
	// caught in vfork(2) by the SIGSTOP waits in the kernel (D) with the
	// SIGSTOP pending until its child is continued
	// (TestWithoutProcGroupStoppedDuringVfork): it runs none of its own
	// code, so it counts.
	stopped := func(pid int) bool {
		m, _, ok := readMember(pid)
		return ok && (m.stopped() || m.state == 'D' && stopComing(pid))
	}
	for round := range 2 {
		selfStopped := 0
		s.stopSelf = func() {
			selfStopped++
			// Each has stopped, or has the SIGSTOP and stops with no more
			// from distlock (a process may take the signal a moment
			// before it shows T).
			waitFor(t, "the command and its background process to stop, distlock stopped", func() bool { return stopped(p.pid) && stopped(bg) })
		}
		s.jobSignal(syscall.SIGTSTP)
		waitFor(t, "distlock to stop itself", func() bool { s.polled(); return selfStopped > 0 })
		s.confirmed(nil)
		if stopped(p.pid) || stopped(bg) {
			t.Fatalf("round %d: continued and confirmed, yet the command (stopped %v) or its background process (stopped %v) was not continued",
				round, stopped(p.pid), stopped(bg))
		}
	}
}

// Without a watcher and without /proc, a process the command left behind
// (distlock's child once the command has exited) is reaped when it exits:
// its zombie does not keep the group existing, and the lock held, for
// ever.
func TestWithoutProcOrWatcherReapsLeftChild(t *testing.T) {
	untrustedProc(t)
	prepareReaping()
	sh := exec.Command("sh", "-c", "sleep 0.2 & exit 0")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := sh.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	sh.Wait()
	p := &Process{pid: pgid, pgid: pgid, done: make(chan struct{})}
	close(p.done)
	if !p.groupRunning() {
		t.Fatal("the group counts as ended while the command's background sleep runs")
	}
	waitFor(t, "the group to count as ended once its background sleep exited", func() bool { return !p.groupRunning() })
}

// Without /proc, a group whose shell forks all the time counts as stopped
// even when the SIGSTOP caught a vfork child before its exec: the shell
// then waits in the kernel (D), never stopped, until that child is
// continued, so its own stop is no sign to wait for (waiting for it hung
// in 10 of 100 such stops). Every member stops all the same.
func TestWithoutProcGroupStoppedDuringVfork(t *testing.T) {
	untrustedProc(t)
	p, _, _ := supervised(t, "while :; do /bin/true; done", Control{KillGrace: time.Second})
	for trial := range 50 {
		deadline := time.Now().Add(3 * time.Second)
		for !p.allStopped(true) {
			if time.Now().After(deadline) {
				t.Fatalf("trial %d: the group never counted as stopped", trial)
			}
			time.Sleep(time.Millisecond)
		}
		waitFor(t, "every member to stop, or wait in the kernel with the SIGSTOP pending", func() bool {
			ms, err := realMembers(p)
			for _, m := range ms {
				if m.running() && !m.stopped() && !(m.state == 'D' && stopComing(m.pid)) {
					return false
				}
			}
			return err == nil
		})
		p.signalGroup(syscall.SIGCONT)
		time.Sleep(time.Duration(trial%5) * time.Millisecond)
	}
}

// realMembers lists the command's group (but the pin) from the real
// /proc, which the tests have, while the group check is told not to trust
// it.
func realMembers(p *Process) ([]member, error) {
	was := procTrusted
	procTrusted = func() bool { return true }
	defer func() { procTrusted = was }()
	return groupMembers(p.pgid, p.pin())
}
