package child

import (
	"errors"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/distlock/distlock/internal/procfs"
)

// Without a /proc to trust. /proc may be missing, or be another pid
// namespace's (`unshare -pf` without --mount-proc), where /proc/PID names
// someone else: a scan there sees none of the command's processes, or
// the wrong ones. Then the group check falls back on what needs no /proc:
//
//   - the leader runs until it is reaped;
//   - after it: distlock is a child subreaper, so whatever the command
//     leaves behind is distlock's child once its parent has exited, and a
//     process of the group whose parent runs has that parent, the
//     command's too, between it and distlock: the group runs while a child
//     of distlock in it runs (waitid(P_PGID), which reaps the exited ones);
//   - on the leader's exit the group gets SIGTERM even when no such child
//     is left, for a process of it that this cannot see (one whose parent
//     has left the group, or does not descend from the command): the pin
//     keeps the group's number the command's meanwhile (watch.go).
//
// Without a watcher (no pin) the group's number is the command's pid and
// kill(-pgid, 0) tells whether the group still exists, once its exited
// members that are distlock's children are reaped.
//
// Job control without /proc: whether each member has stopped cannot be
// read, so the group is stopped with SIGSTOP (which cannot be caught or
// ignored) once stopGrace is over, and counts as stopped then. A member
// that distlock may not signal (setuid) is not stopped by it, and is not
// waited for.

// errProcUntrusted: /proc is not this process's (procfs.Own).
var errProcUntrusted = errors.New("/proc is not this pid namespace's proc filesystem")

// procTrusted reports whether /proc may be scanned (once per process: a
// test sets it to false to run the fallback).
var procTrusted = sync.OnceValue(procfs.Own)

// GroupTracked reports whether the command's group can be told apart
// precisely (/proc is this pid namespace's). When not, a process of it
// that is not distlock's child, and whose parent is not in the group,
// goes unseen: it gets the SIGTERM when the command exits, and no more.
func GroupTracked() bool { return procTrusted() }

// groupRunningWithoutProc is groupRunning without /proc (see above).
func (p *Process) groupRunningWithoutProc() bool {
	select {
	case <-p.done:
	default:
		return true // the leader runs, or is not reaped yet
	}
	if p.watcher == nil {
		// No pin: the group exists while a process of it does (a member
		// we may not signal too: EPERM means alive), a zombie too: the
		// exited ones left to us (the leader is reaped) go first.
		childInGroup(p.pgid)
		return !errors.Is(syscall.Kill(-p.pgid, 0), syscall.ESRCH)
	}
	return childInGroup(p.pgid)
}

// allStoppedWithoutProc is allStopped without /proc (see above): false
// until force, then the group gets SIGSTOP and counts as stopped: every
// member distlock may signal is then stopped, or has the SIGSTOP pending
// and runs none of its own code before it stops. (The leader's own stop
// is no sign to wait for: a shell waiting in vfork(2) for a child stopped
// before its exec stays in the kernel, not stopped, until that child is
// continued; see stopComing.)
func (p *Process) allStoppedWithoutProc(force bool) bool {
	if !force {
		return false
	}
	p.signalGroup(syscall.SIGSTOP)
	return true
}

// childInGroup reports whether a child of distlock in group pgid runs,
// reaping the exited ones: the pin too, which is distlock's only once the
// watcher has died, and then needs no keeping while a process of the
// group runs (a group's number is not reused while it has a member).
func childInGroup(pgid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PGID, pgid, &info, unix.WEXITED|unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false // ECHILD: no child of ours in the group
		case info.Signo == 0:
			return true // children, none exited
		}
	}
}

// termUnseen sends SIGTERM to the group of a leader that has exited when
// /proc cannot be trusted and the group's number is pinned, for a process
// of it that childInGroup cannot see.
func (p *Process) termUnseen() {
	if !procTrusted() && p.watcher != nil {
		p.signalGroup(syscall.SIGTERM)
	}
}
