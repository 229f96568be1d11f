//go:build linux && (amd64 || arm64)

package child

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A process whose main thread has ended (pthread_exit) while another
// thread runs on shows Z (zombie) in /proc/PID/stat: a process of the
// command's group all the same. testdata/mainexits.c is such a process,
// built with gcc.

// mainExits builds testdata/mainexits.c (skipping the test without gcc)
// and returns the program's path.
func mainExits(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" {
		t.Fatal("gcc is needed to build testdata/mainexits.c (CI requires this test)")
	}
	if err != nil {
		t.Skip("needs gcc to build testdata/mainexits.c, a process whose main thread exits before its other thread")
	}
	src, err := filepath.Abs(filepath.Join("testdata", "mainexits.c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mainexits")
	if out, err := exec.Command(gcc, "-o", bin, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// threadOf waits for mainexits's "PID TID" file: its main thread has
// ended, the other runs.
func threadOf(t *testing.T, ids string) (pid, tid int) {
	t.Helper()
	waitFor(t, "the main thread to end, another running on", func() bool {
		b, err := os.ReadFile(ids)
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid, &tid)
		return err == nil
	})
	return pid, tid
}

// threadRuns reports whether thread tid of process pid still runs.
func threadRuns(pid, tid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", pid, tid))
	return err == nil
}

// Both scans of the group (distlock's, and the forked watcher's after
// distlock died) count such a process as running, until it has ended.
func TestGroupScanCountsProcessWhoseMainThreadEnded(t *testing.T) {
	bin := mainExits(t)
	ids := filepath.Join(t.TempDir(), "ids")
	c := exec.Command(bin, ids)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { c.Wait(); close(waited) }()
	defer func() { c.Process.Kill(); <-waited }()
	pid, tid := threadOf(t, ids)
	if m, _, ok := readMember(pid); !ok || m.state == 'Z' {
		t.Errorf("readMember(%d) = %+v, %v: its main thread has ended but a thread runs; want it running", pid, m, ok)
	}
	if !anyRunning(pid, 0) {
		t.Error("the in-process scan finds no process of the group running: it would release the lock")
	}
	plan := scanPlan()
	if forkedGroupGone(plan, pid) {
		t.Error("the watcher's scan finds the group gone: it would exit and free the lock files")
	}
	// Ended: both see it gone (the zombie left until Wait reaps it too).
	syscall.Kill(pid, syscall.SIGKILL)
	waitFor(t, "the killed thread to end", func() bool { return !threadRuns(pid, tid) })
	if anyRunning(pid, 0) {
		t.Error("the in-process scan still finds the group running once it has ended")
	}
	if !forkedGroupGone(plan, pid) {
		t.Error("the watcher's scan still finds the group running once it has ended")
	}
}

// scanPlan is a forkPlan set up for forkedGroupGone.
func scanPlan() *forkPlan {
	p := new(forkPlan)
	p.prepareScan()
	return p
}

// The command leaves such a process in its group and exits: Supervise
// SIGTERMs it (it dies: SIGTERM's default) and returns only once its last
// thread has ended, so the lock is kept meanwhile.
func TestSuperviseWaitsForProcessWhoseMainThreadEnded(t *testing.T) {
	bin := mainExits(t)
	ids := filepath.Join(t.TempDir(), "ids")
	script := `"$0" "$1" & while [ ! -s "$1" ]; do sleep 0.01; done`
	p, err := Start(Spec{Args: []string{"sh", "-c", script, bin, ids}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Outcome, 1)
	returned := false
	t.Cleanup(func() {
		if !returned { // the group is still pinned: Supervise runs
			p.signalGroup(syscall.SIGKILL)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("Supervise has not returned 10 s after the group's SIGKILL")
			}
		}
	})
	pid, tid := threadOf(t, ids)
	go func() { done <- p.Supervise(Control{KillGrace: 20 * time.Second}) }()
	select {
	case <-done:
		returned = true
	case <-time.After(10 * time.Second):
		t.Fatal("Supervise has not returned 10 s after the command's end, though SIGTERM ends what it left")
	}
	if threadRuns(pid, tid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("Supervise returned while a process of the command's group still ran (its main thread had ended)")
	}
}
