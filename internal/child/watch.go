package child

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WatchArg is the hidden first argument that makes distlock run as the
// group watcher (see watcher); Execute checks for it before anything
// else.
const WatchArg = "__distlock-watch-group"

// PinArg is the hidden first argument of the group's pin (see watcher).
const PinArg = "__distlock-pin-group"

// goodbye is what a living distlock writes before letting the watcher go.
const goodbye = 'q'

// watcher is the group watcher of a running command.
//
// It is a copy of distlock, deaf to every signal that can be ignored,
// that reads from a pipe (on Linux on amd64 and arm64, a unix socket)
// whose only writer is distlock. If distlock dies (even by SIGKILL) it
// closes with no goodbye and the watcher SIGKILLs the command's process
// group, again and again, until no process of it runs; then it exits. Pdeathsig alone only reaches the
// direct child; a grandchild (the `sleep` that `sh -c` forks) would run
// on unlocked.
//
// On Linux the watcher makes the command's group: it starts the group's
// "pin", a copy of distlock that does nothing but wait for the watcher to
// end, as the leader of a new process group, and the command is started
// into that group. The watcher never reaps the pin, so the pin, alive or
// exited, is a member of the group until the watcher ends; a process
// group's number cannot be given to another group while any member of it
// exists, an exited one not yet reaped included. So whatever signals the
// group with kill(-pgid) (the watcher, or distlock while the watcher or
// its pin is there: distlock, a subreaper, gets the pin if the watcher
// dies, and reaps it last) can only ever reach the command's processes,
// however fast PID numbers wrap. The watcher itself is not in the group:
// no signal to the group (Ctrl-C, Ctrl-Z, distlock's SIGKILL) reaches it.
// A living pin also keeps the group from being orphaned when distlock
// dies, so the kernel does not continue a stopped group (Ctrl-Z) before
// the watcher has killed it.
//
// It exits last: it holds duplicates of the lease's lock files, if the
// engine's lock is an open file's (lock.FileLocked: the file engine),
// given at its start or, when forked ahead of the lock, sent over its
// socket before the command starts (hand, fork_linux.go). The kernel
// frees such a lock when the last descriptor closes, so a SIGKILLed
// distlock's lock is freed only once the watcher exits, after the last
// process of the command's group is gone.
type watcher struct {
	pid  int
	reap func()   // waits for the watcher to exit
	w    *os.File // the pipe's write end, or distlock's end of the socket
	pgid int      // the group watched: the pin's (Linux) or the command's
}

// watcherReady bounds the wait for a starting watcher (a loaded machine,
// a race-detector build).
const watcherReady = 10 * time.Second

// startWatcher starts a watcher keeping the files keep open. With pgid 0
// it makes a new group for the command (Linux; the watcher's pgid says
// which); otherwise it watches group pgid. It returns once the watcher
// has ignored its signals (and made the group). A watcher that cannot
// start is reported, not fatal.
func startWatcher(pgid int, keep []*os.File) (*watcher, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	defer ready.Close()
	c := exec.Command(exe, WatchArg)
	if pgid != 0 {
		c.Args = append(c.Args, strconv.Itoa(pgid))
	}
	c.Args[0] = "distlock"
	c.Stdin, c.Stdout = r, readyW
	c.ExtraFiles = keep
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = c.Start()
	r.Close()
	readyW.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	n, err := readReady(ready)
	if err != nil {
		c.Process.Kill()
		w.Close()
		c.Wait()
		return nil, err
	}
	return &watcher{pid: c.Process.Pid, reap: func() { c.Wait() }, w: w, pgid: n}, nil
}

// readReady reads the watcher's "r<pgid>\n": it is ready, and the group's
// number.
func readReady(ready *os.File) (int, error) {
	ready.SetReadDeadline(time.Now().Add(watcherReady))
	line, err := bufio.NewReader(ready).ReadString('\n')
	n, perr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "r"))
	if err != nil || !strings.HasPrefix(line, "r") || perr != nil || n <= 1 {
		return 0, fmt.Errorf("the group watcher did not start: %q, %v", line, err)
	}
	return n, nil
}

// release says goodbye and reaps the watcher, then the pin (which distlock
// gets when the watcher ends): call it once the group is gone and distlock
// will signal it no more (the group's number is free once both are
// reaped).
func (w *watcher) release() {
	if w == nil {
		return
	}
	// The byte sits in the pipe (socket) even if the watcher has not
	// started reading yet.
	w.w.Write([]byte{goodbye})
	w.w.Close()
	go func() {
		w.reap()
		if watcherLeads {
			var ws syscall.WaitStatus
			syscall.Wait4(w.pgid, &ws, 0, nil) // ECHILD if init got it
		}
	}()
}

// WatchMain is the watcher process: ignore signals, make the command's
// group (no args) or take the one named, say it is ready, wait for the
// goodbye on stdin; on EOF without it, distlock is gone: kill the group it
// left, and exit once no process of it runs. (On Linux on amd64 and
// arm64 the watcher is forked instead: fork_linux.go.)
func WatchMain(args []string) int {
	ignoreSignals()
	var pgid int
	switch len(args) {
	case 0:
		var err error
		if pgid, err = startPin(); err != nil {
			return 70
		}
	case 1:
		n, err := strconv.Atoi(args[0])
		if err != nil || n <= 1 {
			return 64
		}
		pgid = n
	default:
		return 64
	}
	fmt.Fprintf(os.Stdout, "r%d\n", pgid)
	os.Stdout.Close()
	b := make([]byte, 1)
	n, err := os.Stdin.Read(b)
	if n == 1 && b[0] == goodbye {
		return 0
	}
	if err == nil || err == io.EOF {
		killGroup(pgid)
	}
	return 0
}

// startPin starts the pin in a new process group and returns the group's
// number. The pin is never waited for (see watcher); the write end of its
// stdin stays open, unused, until the watcher exits.
func startPin() (int, error) {
	closeOnExec() // the lock files are the watcher's to hold, not the pin's
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	c := exec.Command(exe, PinArg)
	c.Args[0] = "distlock"
	c.Stdin = r
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return 0, err
	}
	r.Close()
	pinKeep = w
	return c.Process.Pid, nil
}

// pinKeep is the write end of the pin's stdin: the pin lives as long as
// the watcher does.
var pinKeep *os.File

// PinMain is the pin: deaf to signals, it waits for the watcher to end.
func PinMain() int {
	ignoreSignals()
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// closeOnExec marks every descriptor above stderr close-on-exec.
func closeOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// ignoreSignals makes the watcher (and the pin) deaf to every signal that
// can be ignored and would otherwise end or stop it: the terminal's, those
// distlock forwards to the group, whatever the command sends its own
// group. Signals Go needs (SIGURG, SIGPROF), SIGCHLD (ignoring it would
// have the kernel reap the pin) and those that report faults stay.
func ignoreSignals() {
	for s := syscall.Signal(1); s <= 64; s++ {
		switch s {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGURG, syscall.SIGPROF, syscall.SIGCHLD,
			syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS:
			continue
		}
		signal.Ignore(s)
	}
}
