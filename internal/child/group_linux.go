package child

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A process group, as /proc shows it. The command's group holds the group
// watcher (watch.go), which leads it, the command and whatever it
// started. The watcher pins the group's number: a group exists as long as
// one member does, even an exited one not yet reaped, so while the
// watcher (or its unreaped zombie: distlock reaps it last) is there, no
// other group can get the number. Signalling "the group" can therefore
// only ever reach the command's processes and the watcher.

// member is one process of a group.
type member struct {
	pid, ppid int
	state     byte // R, S, D, T (stopped), t (traced), Z (zombie), X ...
}

// running: not exited. A zombie has exited; it holds no lock, runs no code.
func (m member) running() bool { return m.state != 'Z' && m.state != 'X' }

// stopped: not running code until continued (SIGSTOP'd, SIGTSTP'd, traced).
func (m member) stopped() bool { return m.state == 'T' || m.state == 't' }

// readMember reads /proc/PID/stat; ok is false when the process is gone.
func readMember(pid int) (m member, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return member{}, 0, false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return member{}, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 3 || len(f[0]) != 1 {
		return member{}, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return member{}, 0, false
	}
	return member{pid: pid, ppid: ppid, state: f[0][0]}, pgrp, true
}

// groupMembers lists every process of group pgid (zombies included) but
// the one with pid except.
func groupMembers(pgid, except int) ([]member, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var ms []member
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == except {
			continue
		}
		if m, pgrp, ok := readMember(pid); ok && pgrp == pgid {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// watcherLeads: the watcher leads the command's group (watch.go).
const watcherLeads = true

// errNoPidfd: the kernel has no pidfd_open (Linux before 5.3).
var errNoPidfd = errors.New("pidfd_open is not supported")

// signalMember sends sig to process pid if, and only if, it belongs to
// group pgid. The pidfd names the process itself, not its number, so the
// signal cannot reach a process that took the number after pid exited; the
// group is checked after the pidfd is taken, so it is the group of the
// process the pidfd names (or of its successor, if that one exited
// meanwhile: then the signal fails with ESRCH). It returns nil when the
// process is gone or has left the group.
func signalMember(pid, pgid int, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS):
		return errNoPidfd
	case errors.Is(err, unix.ESRCH):
		return nil
	case err != nil:
		return err
	}
	defer unix.Close(fd)
	if _, pgrp, ok := readMember(pid); !ok || pgrp != pgid {
		return nil
	}
	err = unix.PidfdSendSignal(fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// signalOthers sends sig to every running member of group pgid but the
// one with pid except (the watcher), one by one, until a pass over the
// group finds no member it has not signalled yet (a member may fork while
// a pass runs; a process that got SIGKILL or SIGSTOP cannot fork any
// more). It reports the members that could not be signalled (EPERM: a
// setuid program, say). Without pidfds it signals the whole group with
// kill(2), except included: the group's number is pinned, so that reaches
// the command's group only.
func signalOthers(pgid, except int, sig syscall.Signal) (denied []int, err error) {
	done := map[int]bool{}
	for pass := 0; pass < 1000; pass++ {
		ms, err := groupMembers(pgid, except)
		if err != nil {
			return denied, err
		}
		fresh := false
		for _, m := range ms {
			if !m.running() || done[m.pid] {
				continue
			}
			fresh = true
			done[m.pid] = true
			switch err := signalMember(m.pid, pgid, sig); {
			case errors.Is(err, errNoPidfd):
				return nil, syscall.Kill(-pgid, sig)
			case errors.Is(err, unix.EPERM):
				denied = append(denied, m.pid)
			}
		}
		if !fresh {
			return denied, nil
		}
	}
	return denied, nil
}

// canSignal reports whether we may signal process pid (kill(pid, 0) is
// not refused with EPERM).
func canSignal(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}

// reapZombies collects our own exited children among ms, but never skip
// (the watcher, reaped last, and the leader, reaped by its Wait).
func reapZombies(ms []member, skip ...int) {
	self := os.Getpid()
next:
	for _, m := range ms {
		if m.running() || m.ppid != self {
			continue
		}
		for _, s := range skip {
			if m.pid == s {
				continue next
			}
		}
		var ws syscall.WaitStatus
		syscall.Wait4(m.pid, &ws, syscall.WNOHANG, nil)
	}
}

// killOthers SIGKILLs every running member of group pgid but self (the
// watcher) and reports whether there was any.
func killOthers(pgid, self int) bool {
	ms, err := groupMembers(pgid, self)
	if err != nil {
		syscall.Kill(-pgid, syscall.SIGKILL) // /proc unreadable: the whole group, self included
		return false
	}
	for _, m := range ms {
		if m.running() {
			signalOthers(pgid, self, syscall.SIGKILL)
			return true
		}
	}
	return false
}

// groupRunning reports whether a process of the command's group other
// than the watcher still runs, reaping the exited ones left to us (we are
// a subreaper). It looks at the members it saw last time first: a full
// scan of /proc only when those are gone.
func (p *Process) groupRunning() bool {
	for _, pid := range p.known {
		if m, pgrp, ok := readMember(pid); ok && pgrp == p.pgid && m.running() {
			return true
		}
	}
	ms, err := groupMembers(p.pgid, p.watcher.pid())
	if err != nil {
		// No /proc: kill(2) still tells whether the group exists (and a
		// member we may not signal still counts: EPERM means alive).
		return !errors.Is(syscall.Kill(-p.pgid, 0), syscall.ESRCH)
	}
	reapZombies(ms, p.watcher.pid(), p.pid)
	p.known = p.known[:0]
	for _, m := range ms {
		if m.running() {
			p.known = append(p.known, m.pid)
		}
	}
	return len(p.known) > 0
}

// knownUnsignallable lists the members seen running at the last full look
// (groupRunning) that we may not signal.
func (p *Process) knownUnsignallable() []int {
	var pids []int
	for _, pid := range p.known {
		if m, pgrp, ok := readMember(pid); ok && pgrp == p.pgid && m.running() && !canSignal(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runningCount counts the running members of the command's group (but the
// watcher).
func (p *Process) runningCount() int {
	ms, _ := groupMembers(p.pgid, p.watcher.pid())
	n := 0
	for _, m := range ms {
		if m.running() {
			n++
		}
	}
	return n
}

// unsignallable lists the running members of the command's group (but the
// watcher) that we may not signal: started setuid, or by sudo.
func (p *Process) unsignallable() []int {
	ms, _ := groupMembers(p.pgid, p.watcher.pid())
	var pids []int
	for _, m := range ms {
		if m.running() && !canSignal(m.pid) {
			pids = append(pids, m.pid)
		}
	}
	return pids
}

// allStopped reports whether every running member of the command's group
// (but the watcher) is stopped; it SIGSTOPs the ones that are not when
// force is set.
func (p *Process) allStopped(force bool) bool {
	ms, err := groupMembers(p.pgid, p.watcher.pid())
	if err != nil {
		return false
	}
	all := true
	for _, m := range ms {
		if m.running() && !m.stopped() {
			all = false
			if force && errors.Is(signalMember(m.pid, p.pgid, syscall.SIGSTOP), errNoPidfd) {
				syscall.Kill(-p.pgid, syscall.SIGSTOP) // the watcher too: no way around it
			}
		}
	}
	return all
}

// signalGroup sends sig to the command's group. SIGKILL and SIGSTOP go
// member by member to all but the watcher, which they would end or
// freeze; the others go to the whole group at once (the watcher ignores
// them). Either way they reach the command's group only: its number is
// pinned by the watcher (or by its zombie, which distlock reaps last).
func (p *Process) signalGroup(sig syscall.Signal) error {
	if p.watcher != nil && (sig == syscall.SIGKILL || sig == syscall.SIGSTOP) {
		_, err := signalOthers(p.pgid, p.watcher.pid(), sig)
		return err
	}
	return syscall.Kill(-p.pgid, sig)
}

// killGroup SIGKILLs every other member of group pgid until none runs.
// A member that cannot be signalled (a setuid program) or dies slowly
// (uninterruptible I/O) keeps the watcher, and the lock files it holds,
// until it ends.
func killGroup(pgid int) {
	self := os.Getpid()
	for delay := time.Millisecond; killOthers(pgid, self); delay = min(2*delay, 100*time.Millisecond) {
		time.Sleep(delay)
	}
}
