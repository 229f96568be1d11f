//go:build linux && (amd64 || arm64)

package child

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The group watcher and its pin without an exec (see watcher in watch.go
// for what they are for). Re-executing distlock twice per run cost two
// start-ups of a large binary (its runtime and package initialisation) on
// every `distlock run`; forking is a copy of page tables. The forked
// processes run no Go: from the fork on they execute only the functions
// below, each marked nosplit (no stack check that could call into the
// runtime) and norace, making raw system calls on memory prepared before
// the fork (the same discipline as the syscall package's own
// forkAndExecInChild). Signals are blocked on the forking thread across
// the fork, so that no Go signal handler ever runs in a forked process;
// each forked process then ignores (or resets) every signal before it
// unblocks any.
//
// The watcher is forked holding no lock file, and handed the lock files
// once the lock is had (hand), before the command starts. A waiter forks
// it while it waits (Prepared: runner.Run starts it at the first busy
// answer), so that at the handover only the lock files are handed over
// and the command started, with no fork on the way.
//
// The watcher: its own process group (not the command's), every signal
// ignored but SIGCHLD (left at its default, so the pin is never reaped
// behind its back) and the fault signals (default: die), only its own
// descriptors kept (its end of a unix socket whose other end only
// distlock holds, the ready pipe; /dev/null as stdin, stdout and stderr).
// It forks the pin, has it lead a new group, writes "r<pin>\n" on the
// ready pipe, and reads distlock's socket (recvmsg). A handing byte
// brings the lock files (SCM_RIGHTS), which it keeps open until it exits;
// it echoes the byte once it holds them (hand waits for that).
// A goodbye: it exits. Anything else (EOF: distlock is dead, even by
// SIGKILL): it SIGKILLs the command's group, again and again, until a scan
// of /proc finds none of it running, holding the lock files all along;
// then it exits.
//
// The pin: leads the command's group, ignores every signal it can, keeps
// no descriptor but the read end of a pipe whose write end only the
// watcher holds, and waits for EOF on it.

// forkAhead: the watcher can be forked before the lock is taken and
// handed the lock files afterwards (see Prepared).
const forkAhead = true

// maxKeep bounds the lock files handed to the watcher (the file engine's
// semaphore hands out two). hand refuses more: the watcher's control
// buffer (cmsgRoom) holds maxKeep descriptors, and the kernel closes the
// descriptors of a message whose control part does not fit (MSG_CTRUNC),
// which would let a lock go with its command still running.
const maxKeep = 8

// cmsgRoom is the room for one SCM_RIGHTS message of maxKeep descriptors:
// CMSG_SPACE(maxKeep*4) is 48 on 64-bit Linux (a test checks it fits).
const cmsgRoom = 64

// handing is the byte that carries the lock files to the watcher.
const handing = 'k'

// forkPlan is all a forked watcher and its pin touch, prepared before the
// fork. The forked code writes no Go pointer into it (no write barrier
// may run there): the pointers in msg and iov are set before the fork.
type forkPlan struct {
	n      int    // descriptors in fds
	ctlW   int    // distlock's end of the watcher's socket: closed first
	fds    [2]int // to keep, in order: the watcher's end of the socket, the ready pipe
	tmp    [2]int
	pinP   [2]int32 // the pin's pipe (made by the watcher)
	sigIgn [4]uint64
	sigDfl [4]uint64
	all    uint64 // a full signal mask
	none   uint64 // an empty one
	old    uint64 // the forking thread's mask
	buf    [1]byte
	msg    unix.Msghdr // for recvmsg: one byte into buf, descriptors into cmsg
	iov    unix.Iovec
	cmsg   [cmsgRoom]byte
	ready  [24]byte // "r<pin>\n"
	wname  [16]byte // comm of the watcher
	pname  [16]byte // comm of the pin
	null   [16]byte // "/dev/null"
	sleep  [2]int64 // a timespec
	// args is the memory of distlock's own command line (what
	// /proc/PID/cmdline shows), which the forked processes overwrite in
	// their copies with wcmd and pcmd: `pkill -9 -f 'distlock run ...'`
	// must not match the watcher. nil if it could not be found.
	args       []byte
	wcmd, pcmd [40]byte
	// for the /proc scan of the kill path
	proc  [8]byte   // "/proc"
	self  [128]byte // "/proc/self" (a test names another link)
	link  [24]byte
	fs    unix.Statfs_t
	path  [64]byte
	stat  [1024]byte
	dents [8192]byte
}

// prepareScan sets the paths of the kill path's scan of /proc
// (forkedGroupGone).
func (p *forkPlan) prepareScan() {
	copy(p.proc[:], "/proc")
	copy(p.self[:], "/proc/self")
	copy(p.path[:], "/proc/")
}

// startWatcherFork forks the watcher (and it the pin), holding no lock
// file yet (hand gives it them); it returns once the pin leads its group.
// It may run before the lock is taken, on any goroutine: the watcher is a
// child of the process, not of the forking thread.
func startWatcherFork() (*watcher, error) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	// Blocking descriptors: os.NewFile leaves them out of the poller, and
	// the forked code reads its end blocking.
	ctlW := os.NewFile(uintptr(sp[0]), "group watcher")
	ctlR := os.NewFile(uintptr(sp[1]), "group watcher")
	defer ctlR.Close()
	ready, readyW, err := os.Pipe()
	if err != nil {
		ctlW.Close()
		return nil, err
	}
	defer ready.Close()
	p := new(forkPlan)
	files := []*os.File{ctlR, readyW}
	p.n = len(files)
	for i, f := range files {
		p.fds[i] = int(f.Fd()) // Fd leaves f blocking: the forked code reads it blocking
	}
	p.ctlW = int(ctlW.Fd())
	p.iov.Base = &p.buf[0]
	p.iov.SetLen(1)
	p.msg.Iov = &p.iov
	p.msg.SetIovlen(1)
	p.msg.Control = &p.cmsg[0]
	p.sigIgn[0] = 1 // SIG_IGN; SIG_DFL is 0
	p.all = ^uint64(0)
	copy(p.wname[:], "distlock-watch")
	copy(p.pname[:], "distlock-pin")
	copy(p.null[:], "/dev/null")
	p.prepareScan()
	p.args = argsMemory()
	copy(p.wcmd[:], "distlock\x00"+WatchArg)
	copy(p.pcmd[:], "distlock\x00"+PinArg)

	// No descriptor may be created without O_CLOEXEC during the fork
	// (the convention os/exec keeps); the forked code closes all but its
	// own anyway.
	syscall.ForkLock.Lock()
	runtime.LockOSThread()
	pid, errno := forkWatcherProcess(p)
	runtime.UnlockOSThread()
	syscall.ForkLock.Unlock()
	runtime.KeepAlive(files)
	runtime.KeepAlive(p)
	readyW.Close()
	if errno != 0 {
		ctlW.Close()
		return nil, os.NewSyscallError("clone", errno)
	}
	w := &watcher{pid: pid, w: ctlW}
	w.reap = func() {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				return
			}
		}
	}
	n, err := readReady(ready)
	if err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		ctlW.Close()
		w.reap()
		return nil, err
	}
	w.pgid = n
	return w, nil
}

// hand gives a forked watcher the lock files to hold: one byte on its
// socket carrying duplicates of their descriptors (SCM_RIGHTS). Call it
// before the command starts. It returns once the watcher has said it
// holds them (it echoes the byte after reading them): a nil error means
// the watcher was alive, holding the files, after they were sent.
//
// Why the acknowledgement: a send succeeding says only that the watcher's
// end of the socket was open, not that the watcher lives. A watcher
// SIGKILLed just after its fork leaves that end open in its newly forked
// pin until the pin closes its descriptors, and one that dies after the
// send but before it reads purges the message, descriptors and all: in
// both cases the send succeeds and nobody guards the command.
//
// While distlock waits, the files are held: sendmsg(2) takes a reference
// to each open file before it returns, and the message that holds them
// sits in the watcher's receive queue until the watcher reads it. A flock
// is let go only when the last reference to its open file is dropped, so
// from the moment sendmsg returns the lock is held by distlock's
// descriptors and by the message, then by the watcher's descriptors. If
// distlock is SIGKILLed right after, its descriptors close but the
// message stays queued (closing the sending end drops nothing the peer
// has not read): the watcher reads it, then EOF, kills the command's
// group until none of it runs, and only its exit lets the lock go. If
// distlock dies before sendmsg returns, the command has not been started:
// the lock may go.
//
// With no files the byte still goes (without rights), and is echoed: a
// watcher that died while distlock waited fails the hand-over, and the
// caller forks another instead of running the command in a group nobody
// guards.
func (w *watcher) hand(keep []*os.File) error {
	if err := w.send(keep); err != nil {
		return err
	}
	return w.awaitTaken(watcherReady)
}

// send sends the handing byte with the descriptors of keep (hand).
func (w *watcher) send(keep []*os.File) error {
	if len(keep) > maxKeep {
		return errors.New("too many lock files for the group watcher")
	}
	var rights []byte
	if len(keep) > 0 {
		fds := make([]int, len(keep))
		for i, f := range keep {
			fds[i] = int(f.Fd())
		}
		rights = unix.UnixRights(fds...)
	}
	for {
		n, err := unix.SendmsgN(int(w.w.Fd()), []byte{handing}, rights, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		runtime.KeepAlive(keep)
		if err == nil && n != 1 {
			err = errors.New("the group watcher's socket took no byte")
		}
		return err
	}
}

// awaitTaken waits up to limit for the watcher's echo of the handing
// byte: it holds the files. EOF (the watcher died, and whatever held its
// end of the socket closed it), an error or the limit is a failure.
func (w *watcher) awaitTaken(limit time.Duration) error {
	fd := int(w.w.Fd())
	deadline := time.Now().Add(limit)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("the group watcher did not take the lock files in time")
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(left.Milliseconds())+1)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return os.NewSyscallError("poll", err)
		}
		var b [1]byte
		n, err = unix.Read(fd, b[:])
		runtime.KeepAlive(w.w)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("read", err)
		case n != 1 || b[0] != handing:
			return errors.New("the group watcher is gone: it did not take the lock files")
		}
		return nil
	}
}

// forkWatcherProcess blocks every signal on this thread, forks, and in the
// parent restores the mask and returns the child's pid. The child never
// returns from it.
//
//go:nosplit
//go:norace
func forkWatcherProcess(p *forkPlan) (int, syscall.Errno) {
	syscall.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&p.all)), uintptr(unsafe.Pointer(&p.old)), 8, 0, 0)
	r, _, errno := syscall.RawSyscall6(unix.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno == 0 && r == 0 {
		watcherBody(p) // never returns
	}
	syscall.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&p.old)), 0, 8, 0, 0)
	return int(r), errno
}

// forkedSignals sets every signal's action in a forked process: ignored,
// but the fault signals (and SIGCHLD when keepChld) back to their
// defaults. Go's handlers must not run there.
//
//go:nosplit
//go:norace
func forkedSignals(p *forkPlan, keepChld bool) {
	for s := uintptr(1); s <= 64; s++ {
		switch syscall.Signal(s) {
		case syscall.SIGKILL, syscall.SIGSTOP:
			continue
		}
		act := &p.sigIgn
		switch syscall.Signal(s) {
		case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS:
			act = &p.sigDfl
		case syscall.SIGCHLD:
			if keepChld {
				act = &p.sigDfl
			}
		}
		syscall.RawSyscall6(unix.SYS_RT_SIGACTION, s, uintptr(unsafe.Pointer(act)), 0, 8, 0, 0)
	}
}

// forkedUnblock unblocks every signal once forkedSignals has set them all
// to be ignored (or to their default). Left blocked, an ignored signal is
// not dropped but kept pending, and real-time signals queue: a command
// that signals its own group would fill the user's RLIMIT_SIGPENDING
// through the pin for as long as the run lasts.
//
//go:nosplit
//go:norace
func forkedUnblock(p *forkPlan) {
	syscall.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&p.none)), 0, 8, 0, 0)
}

// forkedCmdline overwrites the forked process's copy of the command line
// with text (NUL-padded, cut short if the command line is shorter).
//
//go:nosplit
//go:norace
func forkedCmdline(p *forkPlan, text *[40]byte) {
	for i := 0; i < len(p.args); i++ {
		if i < len(text) && i < len(p.args)-1 {
			p.args[i] = text[i]
		} else {
			p.args[i] = 0
		}
	}
}

// argsMemory is the memory of the process's command line: the runtime's
// os.Args point into it, one argument after another, each followed by a
// NUL. nil if os.Args no longer look like that.
func argsMemory() []byte {
	if len(os.Args) == 0 || len(os.Args[0]) == 0 {
		return nil
	}
	start := unsafe.StringData(os.Args[0])
	n := 0
	for _, a := range os.Args {
		if len(a) > 0 && unsafe.StringData(a) != (*byte)(unsafe.Add(unsafe.Pointer(start), n)) {
			return nil
		}
		if len(a) == 0 && *(*byte)(unsafe.Add(unsafe.Pointer(start), n)) != 0 {
			return nil
		}
		n += len(a) + 1
	}
	b := unsafe.Slice(start, n)
	if b[n-1] != 0 {
		return nil
	}
	return b
}

// forkedExit ends a forked process.
//
//go:nosplit
//go:norace
func forkedExit(code uintptr) {
	for {
		syscall.RawSyscall6(unix.SYS_EXIT_GROUP, code, 0, 0, 0, 0, 0)
	}
}

// forkedBecome starts each forked process (the watcher, the pin) the
// same way: it leads a process group of its own, takes its name (comm) and
// command line, sets its signals (keepChld: see forkedSignals) and
// unblocks them.
//
//go:nosplit
//go:norace
func forkedBecome(p *forkPlan, name *[16]byte, cmd *[40]byte, keepChld bool) {
	syscall.RawSyscall6(unix.SYS_SETPGID, 0, 0, 0, 0, 0, 0)
	syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0, 0)
	forkedCmdline(p, cmd)
	forkedSignals(p, keepChld)
	forkedUnblock(p)
}

// watcherBody is the forked watcher (see the top of this file). It and
// the forked helpers it calls are nosplit: the linker checks that the
// whole chain of their frames, from forkWatcherProcess down, fits in the
// stack room a nosplit call may use, so no stack check (and no call into
// the runtime) can happen in the forked process.
//
//go:nosplit
//go:norace
func watcherBody(p *forkPlan) {
	forkedBecome(p, &p.wname, &p.wcmd, true)
	forkedWatcherFds(p)
	forkedNullStdio(p)
	pin := forkedPin(p)
	forkedReady(p, pin)
	forkedAwaitGoodbye(p) // returns only if distlock is gone without one
	forkedKillGroup(p, pin)
}

// forkedCtlFd and forkedReadyFd are the forked watcher's descriptors: its
// end of distlock's socket and the ready pipe (forkedWatcherFds).
const forkedCtlFd, forkedReadyFd = 3, 4

// forkedWatcherFds moves the watcher's descriptors to 3, 4, ... and
// closes every other one but 0, 1 and 2.
//
//go:nosplit
//go:norace
func forkedWatcherFds(p *forkPlan) {
	// Never our own copy of distlock's end of the socket, even if closing
	// the rest fails below: it would keep us from ever seeing EOF.
	syscall.RawSyscall6(unix.SYS_CLOSE, uintptr(p.ctlW), 0, 0, 0, 0, 0)
	// Our descriptors to 3, 4, ..., every other one closed.
	lo := uintptr(3 + p.n)
	for i := 0; i < p.n && i < len(p.fds); i++ {
		r, _, e := syscall.RawSyscall6(unix.SYS_FCNTL, uintptr(p.fds[i]), unix.F_DUPFD_CLOEXEC, lo, 0, 0, 0)
		if e != 0 {
			forkedExit(71)
		}
		p.tmp[i] = int(r)
	}
	for i := 0; i < p.n && i < len(p.tmp); i++ {
		if _, _, e := syscall.RawSyscall6(unix.SYS_DUP3, uintptr(p.tmp[i]), uintptr(3+i), 0, 0, 0, 0); e != 0 {
			forkedExit(71)
		}
	}
	if _, _, e := syscall.RawSyscall6(unix.SYS_CLOSE_RANGE, lo, ^uintptr(0)>>1, 0, 0, 0, 0); e != 0 {
		// No close_range (Linux < 5.9): the usual range, one by one.
		for fd := lo; fd < 1024; fd++ {
			syscall.RawSyscall6(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		}
		for i := 0; i < p.n && i < len(p.tmp); i++ {
			syscall.RawSyscall6(unix.SYS_CLOSE, uintptr(p.tmp[i]), 0, 0, 0, 0, 0)
		}
	}
}

// forkedNullStdio puts /dev/null on 0, 1 and 2 (closes them if it cannot
// be opened): not distlock's stdin, stdout and stderr, as whoever reads
// distlock's output must see its end when distlock ends.
//
//go:nosplit
//go:norace
func forkedNullStdio(p *forkPlan) {
	atFDCWD := unix.AT_FDCWD
	null, _, e := syscall.RawSyscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&p.null[0])), unix.O_RDWR, 0, 0, 0)
	for fd := uintptr(0); fd < 3; fd++ {
		if e != 0 {
			syscall.RawSyscall6(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		} else if fd != null {
			syscall.RawSyscall6(unix.SYS_DUP3, null, fd, 0, 0, 0, 0)
		}
	}
	if e == 0 && null > 2 {
		syscall.RawSyscall6(unix.SYS_CLOSE, null, 0, 0, 0, 0, 0)
	}
}

// forkedPin forks the pin and returns its pid once it leads its own
// group; the watcher exits (71) if it cannot.
//
//go:nosplit
//go:norace
func forkedPin(p *forkPlan) uintptr {
	if _, _, e := syscall.RawSyscall6(unix.SYS_PIPE2, uintptr(unsafe.Pointer(&p.pinP[0])), unix.O_CLOEXEC, 0, 0, 0, 0); e != 0 {
		forkedExit(71)
	}
	pin, _, e := syscall.RawSyscall6(unix.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		forkedExit(71)
	}
	if pin == 0 {
		pinBody(p) // never returns
	}
	// The pin leads its group before we say so (it does the same itself:
	// whichever runs first).
	syscall.RawSyscall6(unix.SYS_SETPGID, pin, pin, 0, 0, 0, 0)
	if g, _, e := syscall.RawSyscall6(unix.SYS_GETPGID, pin, 0, 0, 0, 0, 0); e != 0 || g != pin {
		syscall.RawSyscall6(unix.SYS_KILL, pin, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		forkedExit(71)
	}
	syscall.RawSyscall6(unix.SYS_CLOSE, uintptr(p.pinP[0]), 0, 0, 0, 0, 0)
	return pin
}

// forkedReady writes "r<pin>\n" to distlock on the ready pipe and closes
// it.
//
//go:nosplit
//go:norace
func forkedReady(p *forkPlan, pin uintptr) {
	n := 0
	for v := pin; v > 0; v /= 10 {
		n++
	}
	p.ready[0] = 'r'
	for i, v := n, pin; i > 0 && i < len(p.ready)-1; i-- {
		p.ready[i] = byte('0' + v%10)
		v /= 10
	}
	if n+1 < len(p.ready) {
		p.ready[n+1] = '\n'
	}
	syscall.RawSyscall6(unix.SYS_WRITE, forkedReadyFd, uintptr(unsafe.Pointer(&p.ready[0])), uintptr(n+2), 0, 0, 0)
	syscall.RawSyscall6(unix.SYS_CLOSE, forkedReadyFd, 0, 0, 0, 0, 0)
}

// forkedAwaitGoodbye reads distlock's messages: the lock files (handing,
// with their descriptors, which we keep open until we exit; the byte is
// echoed once we hold them), then a goodbye, on which the watcher exits.
// It returns when distlock is gone without one (EOF, an error, anything
// unexpected), having closed the socket.
//
//go:nosplit
//go:norace
func forkedAwaitGoodbye(p *forkPlan) {
	for {
		p.msg.Controllen = uint64(len(p.cmsg))
		p.msg.Flags = 0
		r, _, e := syscall.RawSyscall6(unix.SYS_RECVMSG, forkedCtlFd, uintptr(unsafe.Pointer(&p.msg)), unix.MSG_CMSG_CLOEXEC, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		// A control part cut short (MSG_CTRUNC: the kernel closed the
		// descriptors that did not fit, and distlock's command may run
		// without its lock files kept) is taken as distlock's end: the
		// command's group is killed rather than left unguarded. hand
		// refuses more files than fit, so it cannot happen.
		if e != 0 || r != 1 || p.msg.Flags&unix.MSG_CTRUNC != 0 {
			break
		}
		if p.buf[0] == goodbye {
			forkedExit(0)
		}
		if p.buf[0] != handing {
			break
		}
		// The files are ours: say so (hand waits for it). Should distlock
		// be gone meanwhile, the next read tells.
		syscall.RawSyscall6(unix.SYS_SENDTO, forkedCtlFd, uintptr(unsafe.Pointer(&p.buf[0])), 1, unix.MSG_NOSIGNAL, 0, 0)
	}
	syscall.RawSyscall6(unix.SYS_CLOSE, forkedCtlFd, 0, 0, 0, 0, 0)
}

// forkedKillGroup: distlock is gone without a goodbye. SIGKILL its
// command's group until none of it runs (the pin, which the kill makes a
// zombie, keeps the number ours meanwhile), then exit, letting the lock
// files go. Without /proc we cannot tell when it is gone: we keep killing
// for as long as we live.
//
//go:nosplit
//go:norace
func forkedKillGroup(p *forkPlan, pin uintptr) {
	for delay := int64(1e6); ; delay = min(2*delay, 100e6) {
		syscall.RawSyscall6(unix.SYS_KILL, uintptr(-int(pin)), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		if forkedGroupGone(p, int(pin)) {
			forkedExit(0)
		}
		p.sleep[0], p.sleep[1] = 0, delay
		syscall.RawSyscall6(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&p.sleep[0])), 0, 0, 0, 0, 0)
	}
}

// forkedGroupGone scans /proc as groupMembers does: no process of group
// pgid runs (zombies have exited, but for one whose other threads run).
// False when /proc cannot be read, or is not this pid namespace's
// (forkedProcOwn): a scan there would find none of the group.
//
//go:nosplit
//go:norace
func forkedGroupGone(p *forkPlan, pgid int) bool {
	if !forkedProcOwn(p) {
		return false
	}
	atFDCWD := unix.AT_FDCWD
	d, _, e := syscall.RawSyscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&p.proc[0])), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return false
	}
	gone := true
	for gone {
		n, _, e := syscall.RawSyscall6(unix.SYS_GETDENTS64, d, uintptr(unsafe.Pointer(&p.dents[0])), uintptr(len(p.dents)), 0, 0, 0)
		if e != 0 {
			gone = false
			break
		}
		if n == 0 {
			break
		}
		for off := uintptr(0); off+19 < n && n <= uintptr(len(p.dents)); {
			reclen := uintptr(p.dents[off+16]) | uintptr(p.dents[off+17])<<8
			if reclen == 0 {
				break
			}
			if forkedRunsIn(p, off+19, pgid) {
				gone = false
				break
			}
			off += reclen
		}
	}
	syscall.RawSyscall6(unix.SYS_CLOSE, d, 0, 0, 0, 0, 0)
	return gone
}

// forkedProcOwn is procfs.Own for the forked watcher: /proc is a proc
// filesystem and its self link names our pid (/proc is this pid
// namespace's).
//
//go:nosplit
//go:norace
func forkedProcOwn(p *forkPlan) bool {
	if _, _, e := syscall.RawSyscall6(unix.SYS_STATFS, uintptr(unsafe.Pointer(&p.proc[0])), uintptr(unsafe.Pointer(&p.fs)), 0, 0, 0, 0); e != 0 || p.fs.Type != unix.PROC_SUPER_MAGIC {
		return false
	}
	atFDCWD := unix.AT_FDCWD
	n, _, e := syscall.RawSyscall6(unix.SYS_READLINKAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&p.self[0])), uintptr(unsafe.Pointer(&p.link[0])), uintptr(len(p.link)), 0, 0)
	if e != 0 || n == 0 || n >= uintptr(len(p.link)) {
		return false
	}
	v := 0
	for i := 0; i < int(n) && i < len(p.link); i++ {
		if p.link[i] < '0' || p.link[i] > '9' {
			return false
		}
		v = v*10 + int(p.link[i]-'0')
	}
	pid, _, _ := syscall.RawSyscall6(unix.SYS_GETPID, 0, 0, 0, 0, 0, 0)
	return v == int(pid)
}

// forkedRunsIn reads /proc/NAME/stat for the directory entry whose name
// starts at p.dents[name]: does that process run in group pgid?
//
//go:nosplit
//go:norace
func forkedRunsIn(p *forkPlan, name uintptr, pgid int) bool {
	// "/proc/" + name + "/stat", for a name of digits only.
	i := 6
	for ; name < uintptr(len(p.dents)) && p.dents[name] != 0; name++ {
		c := p.dents[name]
		if c < '0' || c > '9' || i >= len(p.path)-6 {
			return false
		}
		p.path[i] = c
		i++
	}
	if i == 6 {
		return false
	}
	// getpgid(2) first: cheap, where /proc/PID/stat is not.
	pid := 0
	for j := 6; j < i && j < len(p.path); j++ {
		pid = pid*10 + int(p.path[j]-'0')
	}
	// Only "no such process" or another group rules it out: a getpgid
	// refused (a security module) leaves /proc/PID/stat to tell.
	if g, _, e := syscall.RawSyscall6(unix.SYS_GETPGID, uintptr(pid), 0, 0, 0, 0, 0); e == syscall.ESRCH || (e == 0 && int(g) != pgid) {
		return false
	}
	for j := 0; j < 6 && i < len(p.path); j++ {
		p.path[i] = "/stat\x00"[j]
		i++
	}
	atFDCWD := unix.AT_FDCWD
	f, _, e := syscall.RawSyscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&p.path[0])), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return false // gone meanwhile
	}
	n, _, e := syscall.RawSyscall6(unix.SYS_READ, f, uintptr(unsafe.Pointer(&p.stat[0])), uintptr(len(p.stat)), 0, 0, 0)
	syscall.RawSyscall6(unix.SYS_CLOSE, f, 0, 0, 0, 0, 0)
	if e != 0 || n > uintptr(len(p.stat)) {
		return false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
	k := int(n) - 1
	for k >= 0 && p.stat[k] != ')' {
		k--
	}
	if k < 0 || k+4 >= int(n) {
		return false
	}
	state := p.stat[k+2]
	// skip " state ppid " to pgrp
	k += 4
	for k < int(n) && p.stat[k] != ' ' {
		k++
	}
	k++
	g := 0
	for ; k < int(n) && k < len(p.stat) && p.stat[k] >= '0' && p.stat[k] <= '9'; k++ {
		g = g*10 + int(p.stat[k]-'0')
	}
	if g != pgid || state == 'X' {
		return false
	}
	// A zombie whose other threads run (its main thread alone has exited:
	// pthread_exit) runs: num_threads (field 20; pgrp is field 5) above 1
	// says so, as readMember reads it.
	return state != 'Z' || forkedThreads(p, k, int(n)) > 1
}

// forkedThreads reads num_threads from p.stat[:n], k being the end of
// field 5 (pgrp); 0 if it is not there.
//
//go:nosplit
//go:norace
func forkedThreads(p *forkPlan, k, n int) int {
	for f := 5; f < 20; k++ {
		if k >= n || k >= len(p.stat) {
			return 0
		}
		if p.stat[k] == ' ' {
			f++
		}
	}
	t := 0
	for ; k < n && k < len(p.stat) && p.stat[k] >= '0' && p.stat[k] <= '9'; k++ {
		t = t*10 + int(p.stat[k]-'0')
	}
	return t
}

// pinBody is the forked pin: it leads the command's group and waits for
// the watcher to end.
//
//go:nosplit
//go:norace
func pinBody(p *forkPlan) {
	forkedBecome(p, &p.pname, &p.pcmd, false)
	if p.pinP[0] != 0 {
		if _, _, e := syscall.RawSyscall6(unix.SYS_DUP3, uintptr(p.pinP[0]), 0, 0, 0, 0, 0); e != 0 {
			forkedExit(71)
		}
	}
	if _, _, e := syscall.RawSyscall6(unix.SYS_CLOSE_RANGE, 1, ^uintptr(0)>>1, 0, 0, 0, 0); e != 0 {
		for fd := uintptr(1); fd < 3+uintptr(p.n)+8; fd++ {
			syscall.RawSyscall6(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		}
	}
	for {
		r, _, e := syscall.RawSyscall6(unix.SYS_READ, 0, uintptr(unsafe.Pointer(&p.buf[0])), 1, 0, 0, 0)
		if e == syscall.EINTR || (e == 0 && r > 0) {
			continue
		}
		forkedExit(0)
	}
}
