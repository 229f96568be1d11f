package child

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The command's process group, as /proc shows it. On Linux it is made by
// the group watcher (watch.go): the watcher's pin leads it, the command
// and whatever it starts are in it, the watcher is not. The pin, which
// only the watcher reaps, and only when it exits, keeps the group's number
// from being reused, so kill(-pgid) reaches the command's group only.

// watcherLeads: the watcher makes the command's group (watch.go).
const watcherLeads = true

// member is one process of a group.
type member struct {
	pid, ppid int
	state     byte // R, S, D, T (stopped), t (traced), Z (zombie), X ...
}

// running: not exited. A zombie has exited; it holds no lock, runs no code.
// (readMember gives a process whose main thread alone has exited the state
// of its other threads, not Z.)
func (m member) running() bool { return m.state != 'Z' && m.state != 'X' }

// stopped: not running code until continued (SIGSTOP'd, SIGTSTP'd, traced).
func (m member) stopped() bool { return m.state == 'T' || m.state == 't' }

// stopComing reports whether process pid has a SIGSTOP pending, as a
// process in uninterruptible sleep (D) does when the group's SIGSTOP came
// while it waited in the kernel: it stops the moment it leaves, before it
// runs another instruction of its own. (A shell waiting in vfork(2) for a
// child that was stopped before it could exec is such a process: it stays
// in D until that child is continued.)
func stopComing(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	const stop = uint64(1) << (syscall.SIGSTOP - 1)
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok || (string(name) != "SigPnd" && string(name) != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(string(bytes.TrimSpace(val)), 16, 64); err == nil && mask&stop != 0 {
			return true
		}
	}
	return false
}

// readMember reads /proc/PID/stat; ok is false when the process is gone.
// Plain system calls into a buffer on the stack: when the command ends,
// the group check reads this for every process on the machine (issue 11:
// os.ReadFile's poller registration, fstat and allocations made the scan
// cost more than distlock's whole start-up).
func readMember(pid int) (m member, pgrp int, ok bool) {
	var path [32]byte
	name := strconv.AppendInt(append(path[:0], "/proc/"...), int64(pid), 10)
	st, ok := readStat(append(name, "/stat\x00"...))
	if !ok {
		return member{}, 0, false
	}
	m = member{pid: pid, ppid: st.ppid, state: st.state}
	if m.state == 'Z' && st.threads > 1 {
		m.state = threadsState(pid)
	}
	return m, st.pgrp, true
}

// stat is what the group check reads of /proc/PID/stat.
type stat struct {
	state      byte
	ppid, pgrp int
	threads    int // num_threads: the process's, whichever thread's file
}

// statThreads is num_threads (field 20 of /proc/PID/stat) counted from
// the state (field 3).
const statThreads = 20 - 3

// readStat reads and parses the NUL-terminated path name, a stat file.
func readStat(name []byte) (stat, bool) {
	fd, err := openProc(name)
	if err != nil {
		return stat{}, false
	}
	var buf [1024]byte
	n, err := readFull(fd, buf[:])
	syscall.Close(fd)
	if err != nil {
		return stat{}, false
	}
	b := buf[:n]
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) <= statThreads || len(f[0]) != 1 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	threads, err3 := strconv.Atoi(string(f[statThreads]))
	if err1 != nil || err2 != nil || err3 != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid, pgrp: pgrp, threads: threads}, true
}

// threadsState is the state of process pid when /proc/PID/stat says Z
// with more than one thread: its main thread has exited (pthread_exit)
// and others run on, so the process runs. (A zombie proper counts one
// thread: the kernel counts an exited thread out once it is released,
// which for any thread but the main one is at once; the main thread goes
// last.) It is the state of a thread that runs, one not stopped if there
// is one, else Z (they have all exited meanwhile).
func threadsState(pid int) byte {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return 'Z'
	}
	state := byte('Z')
	for _, t := range tids {
		if t.Name() == strconv.Itoa(pid) {
			continue
		}
		st, ok := readStat([]byte(dir + t.Name() + "/stat\x00"))
		th := member{state: st.state}
		switch {
		case !ok || !th.running():
		case !th.stopped():
			return th.state
		default:
			state = th.state
		}
	}
	return state
}

// openProc opens the NUL-terminated path name read-only.
func openProc(name []byte) (int, error) {
	for {
		fd, _, e := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&name[0])), syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(fd), nil
	}
}

var atFDCWD = unix.AT_FDCWD

// readFull reads fd until EOF or until buf is full.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// groupMembers lists every process of group pgid (zombies included) but
// the one with pid except.
func groupMembers(pgid, except int) ([]member, error) {
	if !procTrusted() {
		return nil, errProcUntrusted
	}
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
		// getpgid(2) first: a system call that reads one field, where
		// /proc/PID/stat formats fifty (~30 µs each on a loaded 2-core
		// machine; the scan read it for every process). Linux answers it
		// for any process in our pid namespace.
		// Only "no such process" or another group rules it out: a getpgid
		// refused (a security module) leaves /proc/PID/stat to tell.
		if g, err := syscall.Getpgid(pid); err == syscall.ESRCH || (err == nil && g != pgid) {
			continue
		}
		if m, pgrp, ok := readMember(pid); ok && pgrp == pgid {
			ms = append(ms, m)
		}
	}
	return ms, nil
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

// anyRunning reports whether a process of group pgid runs (zombies have
// exited), the one with pid except aside.
func anyRunning(pgid, except int) bool {
	ms, err := groupMembers(pgid, except)
	if err != nil {
		// No /proc of ours: kill(2) tells whether the group exists (the
		// watcher's pin, which only the watcher reaps, keeps it existing:
		// the watcher kills for as long as it lives).
		return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	}
	for _, m := range ms {
		if m.running() {
			return true
		}
	}
	return false
}

// groupRunning reports whether a process of the command's group other
// than the pin still runs, reaping the exited ones left to us (we are a
// subreaper) but the pin. It looks at the members it saw last time first:
// a full scan of /proc only when those are gone.
func (p *Process) groupRunning() bool {
	for _, pid := range p.known {
		if m, pgrp, ok := readMember(pid); ok && pgrp == p.pgid && m.running() {
			return true
		}
	}
	ms, err := groupMembers(p.pgid, p.pin())
	if err != nil {
		return p.groupRunningWithoutProc()
	}
	reapZombies(ms, p.pin(), p.pid)
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
// pin).
func (p *Process) runningCount() int {
	ms, _ := groupMembers(p.pgid, p.pin())
	n := 0
	for _, m := range ms {
		if m.running() {
			n++
		}
	}
	return n
}

// unsignallable lists the running members of the command's group (but the
// pin) that we may not signal: started setuid, or by sudo.
func (p *Process) unsignallable() []int {
	ms, _ := groupMembers(p.pgid, p.pin())
	var pids []int
	for _, m := range ms {
		if m.running() && !canSignal(m.pid) {
			pids = append(pids, m.pid)
		}
	}
	return pids
}

// allStopped reports whether every running member of the command's group
// (but the pin) is stopped, or in the kernel with a SIGSTOP that takes
// effect when it leaves (stopComing); when force is set and some are not,
// it SIGSTOPs the group. Without a /proc to trust, see
// allStoppedWithoutProc.
func (p *Process) allStopped(force bool) bool {
	ms, err := groupMembers(p.pgid, p.pin())
	if err != nil {
		return p.allStoppedWithoutProc(force)
	}
	for _, m := range ms {
		if m.running() && !m.stopped() && !(m.state == 'D' && stopComing(m.pid)) {
			if force {
				syscall.Kill(-p.pgid, syscall.SIGSTOP)
			}
			return false
		}
	}
	return true
}

// signalGroup sends sig to the command's group: its number is pinned
// (see watch.go), so it reaches the command's processes only.
func (p *Process) signalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.pgid, sig)
}

// pin is the pid of the group's pin (0 without a watcher).
func (p *Process) pin() int {
	if p.watcher == nil {
		return 0
	}
	return p.pgid
}

// killGroup SIGKILLs group pgid until no process of it runs. A member
// that cannot be signalled (a setuid program) or dies slowly
// (uninterruptible I/O) keeps the watcher, and the lock files it holds,
// until it ends.
func killGroup(pgid int) {
	for delay := time.Millisecond; anyRunning(pgid, 0); delay = min(2*delay, 100*time.Millisecond) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(delay)
	}
}
