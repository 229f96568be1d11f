//go:build linux && (amd64 || arm64)

package child

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockedFile opens a new file in a test directory and flocks it, as the
// file engine holds a lock.
func lockedFile(t *testing.T, name string) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return f, path
}

// lockHeld reports whether path's flock is held (by anyone: a new open
// file cannot take it).
func lockHeld(t *testing.T, path string) bool {
	t.Helper()
	g, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	err = syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return err != nil
}

// holds counts the descriptors of process pid that are open on path.
func holds(pid int, path string) int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// preparedWatcher forks a watcher ahead, as runner.Run does while it
// waits, and takes it, as Start does.
func preparedWatcher(t *testing.T) *watcher {
	t.Helper()
	pre := PrepareWatcher()
	if pre == nil {
		t.Fatal("no watcher prepared ahead on Linux")
	}
	w := pre.take()
	if w == nil {
		t.Fatal("the watcher prepared ahead could not be forked")
	}
	// Drop after take is a no-op: the watcher is ours now.
	pre.Drop()
	if !running(w.pid) {
		t.Fatal("Drop after take let the watcher go")
	}
	return w
}

// state is process pid's state letter (0 once it is gone).
func state(pid int) byte {
	m, _, _ := readMember(pid)
	return m.state
}

// The lock files handed to a watcher forked ahead of the lock are kept by
// it: once hand returns it holds them (it has acknowledged them), so
// distlock's own copies may close and the flock stays held, until the
// watcher is let go. All maxKeep of them (the
// control buffer fits them: a message cut short would have the kernel
// close the rest), and never more (hand refuses).
func TestPreparedWatcherKeepsHandedFiles(t *testing.T) {
	if unix.CmsgSpace(maxKeep*4) > cmsgRoom {
		t.Fatalf("the watcher's control buffer (%d bytes) cannot hold %d descriptors (%d bytes)", cmsgRoom, maxKeep, unix.CmsgSpace(maxKeep*4))
	}
	w := preparedWatcher(t)
	var files []*os.File
	var paths []string
	for i := range maxKeep {
		f, path := lockedFile(t, "lock"+strconv.Itoa(i))
		files, paths = append(files, f), append(paths, path)
	}
	if err := w.hand(append(files, files[0])); err == nil {
		t.Fatalf("hand took %d files, more than the watcher's %d", maxKeep+1, maxKeep)
	}
	if err := w.hand(files); err != nil {
		t.Fatal(err)
	}
	// hand returns once the watcher holds them.
	for _, path := range paths {
		if holds(w.pid, path) != 1 {
			t.Fatalf("%s: hand returned before the watcher held it", path)
		}
	}
	for _, f := range files {
		f.Close()
	}
	for _, path := range paths {
		if !lockHeld(t, path) {
			t.Errorf("%s: the lock went with distlock's copy, the watcher holding it", path)
		}
	}
	if !running(w.pid) {
		t.Fatalf("the watcher is gone (state %q)", state(w.pid))
	}
	w.release()
	for _, path := range paths {
		waitFor(t, "the lock let go with the watcher", func() bool { return !lockHeld(t, path) })
	}
}

// distlock SIGKILLed the moment it has sent the lock files over, before
// the watcher has even read them (here it is stopped), so before its
// acknowledgement: the files are held
// by the message queued on the watcher's socket, so the lock is not freed
// with distlock's copies. The watcher then reads them, sees distlock's
// end, kills the command's group, and only its exit lets the lock go: a
// waiter never gets the lock while a process of the group runs.
func TestHandedFilesHeldWhileInFlight(t *testing.T) {
	w := preparedWatcher(t)
	f, path := lockedFile(t, "lock")
	// The command, in the pin's group.
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: w.pgid}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		syscall.Kill(w.pid, syscall.SIGCONT)
		w.reap()
		var ws syscall.WaitStatus
		syscall.Wait4(w.pgid, &ws, 0, nil) // the pin, ours once the watcher is gone
	})
	syscall.Kill(w.pid, syscall.SIGSTOP)
	waitFor(t, "the watcher stopped", func() bool { return state(w.pid) == 'T' })
	if err := w.send([]*os.File{f}); err != nil {
		t.Fatal(err)
	}
	// distlock's death: every descriptor of it closes, no goodbye.
	w.w.Close()
	f.Close()
	if !lockHeld(t, path) {
		t.Fatal("the lock went with distlock's descriptors while the files were on their way to the watcher")
	}
	if holds(w.pid, path) != 0 {
		t.Fatal("the stopped watcher already holds the file")
	}
	g, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	got := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				got <- err
				return
			}
		}
	}()
	syscall.Kill(w.pid, syscall.SIGCONT)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		if running(cmd.Process.Pid) {
			t.Fatalf("the waiter got the lock while the command still ran (state %q)", state(cmd.Process.Pid))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not let go after distlock's death")
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the command was not killed")
	}
}

// A watcher prepared ahead that is gone by the time the lock is had
// (killed by hand while distlock waited): Start notices as it hands over
// the lock files and forks another, which holds them.
func TestPreparedWatcherGoneStartForksAnother(t *testing.T) {
	f, path := lockedFile(t, "lock")
	p := startAfterPreparedWatcherDied(t, []*os.File{f})
	waitFor(t, "the new watcher holds the lock file", func() bool { return holds(p.watcher.pid, path) == 1 })
	f.Close()
	if !lockHeld(t, path) {
		t.Fatal("the lock went with distlock's copy")
	}
}

// The same without lock files (every engine but the file engine): a
// prepared watcher that died while distlock waited must not be kept, or
// the command would run in a group that nobody guards.
func TestPreparedWatcherGoneWithoutFilesStartForksAnother(t *testing.T) {
	p := startAfterPreparedWatcherDied(t, nil)
	if !running(p.watcher.pid) {
		t.Fatal("the command's watcher is not running")
	}
}

// startAfterPreparedWatcherDied prepares a watcher, SIGKILLs it, and
// starts a command with it and keep: the command must get another one.
func startAfterPreparedWatcherDied(t *testing.T, keep []*os.File) *Process {
	t.Helper()
	pre := PrepareWatcher()
	<-pre.ready
	if pre.w == nil {
		t.Fatal("the watcher prepared ahead could not be forked")
	}
	dead := pre.w.pid
	syscall.Kill(dead, syscall.SIGKILL)
	waitFor(t, "the prepared watcher dead", func() bool { return !running(dead) })
	p, err := Start(Spec{Args: []string{"sleep", "60"}, KeepOpen: keep, Watcher: pre})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		p.Supervise(Control{KillGrace: time.Second})
	})
	if p.WatcherError() != nil || p.watcher == nil {
		t.Fatalf("no watcher: %v", p.WatcherError())
	}
	if p.watcher.pid == dead {
		t.Fatal("Start kept the dead watcher")
	}
	return p
}

// A watcher that dies after the lock files were sent but before it read
// them (stopped here, then SIGKILLed) has not taken them over: the kernel
// purges its socket's queue, descriptors and all. hand must not report
// them taken, or Start would start the command with a watcher that is
// gone (and on the file engine a SIGKILLed distlock would then free the
// lock while its command ran). The same stands for a watcher SIGKILLed
// just after its fork, while its newly forked pin still held the
// watcher's end of the socket (until the pin closes its descriptors a
// send to the dead watcher succeeds).
func TestHandFailsIfWatcherDiesBeforeReading(t *testing.T) {
	w := preparedWatcher(t)
	f, _ := lockedFile(t, "lock")
	t.Cleanup(func() {
		w.reap()
		var ws syscall.WaitStatus
		syscall.Wait4(w.pgid, &ws, 0, nil) // the pin, ours once the watcher is gone
	})
	syscall.Kill(w.pid, syscall.SIGSTOP)
	waitFor(t, "the watcher stopped", func() bool { return state(w.pid) == 'T' })
	handed := make(chan error, 1)
	go func() { handed <- w.hand([]*os.File{f}) }()
	// The files are on their way once distlock's end has bytes the
	// watcher has not read (SIOCOUTQ).
	waitFor(t, "the files sent", func() bool {
		n, err := unix.IoctlGetInt(int(w.w.Fd()), unix.SIOCOUTQ)
		return err == nil && n > 0
	})
	syscall.Kill(w.pid, syscall.SIGKILL)
	select {
	case err := <-handed:
		if err == nil {
			t.Fatal("hand reported the lock files taken by a watcher that died before reading them")
		}
	case <-time.After(2 * watcherReady):
		t.Fatal("hand did not notice the watcher's death")
	}
}
