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
