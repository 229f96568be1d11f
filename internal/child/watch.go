package child

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// WatchArg is the hidden first argument that makes distlock run as the
// group watcher (see watcher); Execute checks for it before anything
// else.
const WatchArg = "__distlock-watch-group"

// goodbye is what a living distlock writes before letting the watcher go.
const goodbye = 'q'

// watcher is the group watcher of a running command.
//
// It is a copy of distlock, deaf to every signal that can be ignored,
// that reads one byte from a pipe whose only writer is distlock. If
// distlock dies (even by SIGKILL) the pipe closes with no goodbye and the
// watcher SIGKILLs every other member of the command's process group,
// again and again, until none is left; then it exits. Pdeathsig alone
// only reaches the direct child; a grandchild (the `sleep` that `sh -c`
// forks) would run on unlocked.
//
// On Linux the watcher leads the command's group: it is started first, in
// a group of its own, and the command is started into that group once the
// watcher has said it is ready (its signals ignored), so no signal sent to
// the group (Ctrl-C, Ctrl-Z) can reach it unprepared. A process group's
// number cannot be given to another group while any member of it exists,
// an exited one not yet reaped included; the watcher is that member for as
// long as it is needed (distlock reaps it last), so whatever signals the
// group, the watcher or distlock, can only ever reach the command's
// processes, however fast PID numbers wrap. The watcher signals member by
// member through pidfds, after checking that each is in its group
// (group_linux.go), so that it does not kill itself.
//
// It exits last: it holds duplicates of the lease's lock files, if the
// engine's lock is an open file's (lock.FileLocked: the file engine). The
// kernel frees such a lock when the last descriptor closes, so a SIGKILLed
// distlock's lock is freed only once the watcher exits, after the last
// process of the command's group is gone.
type watcher struct {
	cmd *exec.Cmd
	w   *os.File // the pipe's write end
}

// watcherReady bounds the wait for a starting watcher (a loaded machine,
// a race-detector build).
const watcherReady = 10 * time.Second

// startWatcher starts a watcher keeping the files keep open. With pgid 0
// it leads a new group for the command (Linux); otherwise it watches group
// pgid from a group of its own. It returns once the watcher has ignored
// its signals. A watcher that cannot start is reported, not fatal.
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
	ready.SetReadDeadline(time.Now().Add(watcherReady))
	b := make([]byte, 1)
	if n, err := ready.Read(b); n != 1 || b[0] != watcherIsReady {
		c.Process.Kill()
		w.Close()
		c.Wait()
		return nil, fmt.Errorf("the group watcher did not start: %v", err)
	}
	return &watcher{cmd: c, w: w}, nil
}

// watcherIsReady is what the watcher writes on stdout once its signals
// are ignored.
const watcherIsReady = 'r'

func (w *watcher) pid() int {
	if w == nil {
		return 0
	}
	return w.cmd.Process.Pid
}

// release says goodbye and reaps the watcher: call it once the group is
// gone and distlock will signal it no more (the group's number is free
// once the watcher is reaped).
func (w *watcher) release() {
	if w == nil {
		return
	}
	// The byte sits in the pipe even if the watcher has not started
	// reading yet.
	w.w.Write([]byte{goodbye})
	w.w.Close()
	go w.cmd.Wait()
}

// WatchMain is the watcher process: ignore signals, say it is ready, wait
// for the goodbye on stdin; on EOF without it, distlock is gone: kill the
// group it left (its own group, or the one named in args), and exit once
// no other member of it is left.
func WatchMain(args []string) int {
	ignoreSignals()
	pgid := syscall.Getpgrp()
	if len(args) == 1 {
		n, err := strconv.Atoi(args[0])
		if err != nil || n <= 1 {
			return 64
		}
		pgid = n
	} else if len(args) != 0 {
		return 64
	}
	os.Stdout.Write([]byte{watcherIsReady})
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

// ignoreSignals makes the watcher deaf to every signal that can be
// ignored and would otherwise end or stop it: the terminal's (it is in the
// command's group, which has the terminal's foreground), those distlock
// forwards to the group, and whatever the command sends its own group.
// Signals Go needs (SIGURG, SIGPROF) and those that report faults stay.
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
