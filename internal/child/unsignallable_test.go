//go:build linux

package child

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be the group watcher and its pin (Start
// re-runs its own executable as those) and the unprivileged supervisor of
// TestUnsignallableMemberKeepsGroup.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WatchArg {
		os.Exit(WatchMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == PinArg {
		os.Exit(PinMain())
	}
	if os.Getenv("CHILD_TEST_SUPERVISOR") != "" {
		os.Exit(superviseHelper())
	}
	os.Exit(m.Run())
}

// superviseHelper runs a command under Supervise (as an unprivileged user)
// and prints when Supervise returned, in ns since the epoch. The command
// leaves a background sleep that ignores SIGTERM in its group, then exits
// once the file "go" appears.
func superviseHelper() int {
	script := `echo $$ > pid; (trap "" TERM; exec sleep 1000) & echo $! > sleeper; while [ ! -f go ]; do sleep 0.01; done`
	p, err := Start(Spec{Args: []string{"sh", "-c", script}, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 1
	}
	out := p.Supervise(Control{KillGrace: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	fmt.Printf("returned %d code %d\n", time.Now().UnixNano(), out.Code)
	return 0
}

// A process of the command's group that distlock may not signal (EPERM:
// setuid, sudo) is alive, not gone: Supervise keeps waiting for it (the
// lock is kept) past the SIGTERM and SIGKILL that end the rest of the
// group, says so once, and returns once it has ended. Real processes, a
// real EPERM: the supervisor runs as nobody, and a root process joins the
// command's group (allowed: same session). Needs root.
func TestUnsignallableMemberKeepsGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a process the supervisor may not signal is made by running it as nobody")
	}
	const nobody = 65534
	// The supervisor runs as nobody: it needs a binary and a directory it
	// may use.
	bin := t.TempDir()
	work := t.TempDir()
	for _, d := range []string{bin, work, filepath.Dir(bin), filepath.Dir(work)} {
		if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "child.test")
	copyFile(t, exe, self)
	logf, err := os.Create(filepath.Join(work, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	outf, err := os.Create(filepath.Join(work, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outf.Close()

	s := exec.Command(self)
	s.Dir = work
	s.Env = append(os.Environ(), "CHILD_TEST_SUPERVISOR=1", "GORACE=atexit_sleep_ms=0")
	s.Stdout, s.Stderr = outf, logf
	s.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true, // never the terminal's foreground: no terminal business here
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { s.Wait(); close(exited) }()
	defer func() {
		s.Process.Kill()
		<-exited
	}()

	_, pgid, ok := readMember(readPIDFile(t, filepath.Join(work, "pid")))
	if !ok {
		t.Fatal("the command is gone")
	}
	sleeper := readPIDFile(t, filepath.Join(work, "sleeper"))
	defer syscall.Kill(sleeper, syscall.SIGKILL)
	// root joins the command's group: the supervisor may not signal it.
	m := exec.Command("sleep", "1000")
	m.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	mDone := make(chan struct{})
	go func() { m.Wait(); close(mDone) }()
	defer func() {
		m.Process.Kill()
		<-mDone
	}()

	// The command exits: its group gets SIGTERM, then SIGKILL 100ms later.
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gone := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	// The sleeper ignores SIGTERM: once it is dead, the SIGKILL was sent.
	waitFor(t, "the SIGKILL of the rest of the group and the warning that a process cannot be signalled", func() bool {
		b, _ := os.ReadFile(filepath.Join(work, "log"))
		warned := strings.Contains(string(b), "cannot be signalled (setuid?); keeping the lock until it ends")
		return gone() || warned && !running(sleeper)
	})
	if gone() {
		b, _ := os.ReadFile(filepath.Join(work, "log"))
		t.Fatalf("the supervisor returned while a process of the group it may not signal still ran:\n%s", b)
	}
	ended := time.Now()
	m.Process.Kill()
	<-mDone
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the supervisor did not return within 20s of the last process of the group ending")
	}
	out, _ := os.ReadFile(filepath.Join(work, "out"))
	var ns int64
	var code int
	if _, err := fmt.Sscanf(string(out), "returned %d code %d", &ns, &code); err != nil {
		t.Fatalf("supervisor's output %q: %v", out, err)
	}
	if returned := time.Unix(0, ns); returned.Before(ended) {
		t.Errorf("Supervise returned %s before the last process of the group ended", ended.Sub(returned))
	}
	if code != 0 {
		t.Errorf("exit status %d, want the command's own 0", code)
	}
	b, _ := os.ReadFile(filepath.Join(work, "log"))
	if n := strings.Count(string(b), "cannot be signalled"); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, b)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	r, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 20s waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// running: the process exists and has not exited (a zombie has).
func running(pid int) bool {
	m, _, ok := readMember(pid)
	return ok && m.running()
}
