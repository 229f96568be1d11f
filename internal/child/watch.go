package child

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// WatchArg is the hidden first argument that makes distlock run as the
// group watcher (see WatchGroup); Execute checks for it before anything else.
const WatchArg = "__distlock-watch-group"

// goodbye is what a living distlock writes before letting the watcher go.
const goodbye = 'q'

// WatchGroup starts a watcher for the command's process group: a copy of
// distlock, in a group of its own and deaf to terminal signals, that reads
// one byte from a pipe whose only writer is this process. If distlock dies
// (even by SIGKILL) the pipe closes with no goodbye and the watcher
// SIGKILLs the whole group at once. Pdeathsig alone only reaches the
// direct child; a grandchild (the `sleep` that `sh -c` forks) would run on
// unlocked. stop says goodbye; call it once the group is gone. A watcher
// that cannot start is reported, not fatal.
func WatchGroup(pgid int) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return func() {}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}, err
	}
	c := exec.Command(exe, WatchArg, strconv.Itoa(pgid))
	c.Args[0] = "distlock"
	c.Stdin = r
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = c.Start()
	r.Close()
	if err != nil {
		w.Close()
		return func() {}, err
	}
	return func() {
		// The byte sits in the pipe even if the watcher has not started
		// reading yet; no need to wait for it (it exits on its own, and
		// distlock is about to exit too).
		w.Write([]byte{goodbye})
		w.Close()
		c.Process.Release()
	}, nil
}

// WatchMain is the watcher process: wait for the goodbye on stdin; on EOF
// without it, distlock is gone: kill the group it left.
func WatchMain(args []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	if len(args) != 1 {
		return 64
	}
	pgid, err := strconv.Atoi(args[0])
	if err != nil || pgid <= 1 {
		return 64
	}
	b := make([]byte, 1)
	n, err := os.Stdin.Read(b)
	if n == 1 && b[0] == goodbye {
		return 0
	}
	if err == nil || err == io.EOF {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return 0
}
