package child

import (
	"encoding/binary"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// terminal is distlock's controlling terminal, when it has one. The
// command runs in the terminal's foreground, as a shell's job does, so it
// can read what is typed (a confirmation, a sudo or ssh password: those
// read /dev/tty whatever stdin is) and Ctrl-C, Ctrl-Z reach it.
type terminal struct{ fd int }

// openTerminal opens the controlling terminal; nil when there is none
// (cron, a service, a pipeline with no terminal).
func openTerminal() *terminal {
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	t := &terminal{fd: fd}
	if t.foreground() < 0 {
		unix.Close(fd)
		return nil
	}
	return t
}

// foreground is the terminal's foreground process group, -1 if unknown.
func (t *terminal) foreground() int {
	pgrp, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return pgrp
}

// ours: distlock's own group is in the terminal's foreground.
func (t *terminal) ours() bool { return t.foreground() == unix.Getpgrp() }

// setForeground makes pgid the terminal's foreground group. Called from
// the background it needs SIGTTOU ignored, as it is while a command runs
// (Start).
func (t *terminal) setForeground(pgid int) error {
	return unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgid)
}

func (t *terminal) close() { unix.Close(t.fd) }

// jobStop reports whether process pid (our child) has stopped on a job-
// control signal (SIGTSTP: Ctrl-Z; SIGTTIN, SIGTTOU: it used the terminal
// from the background) since the last look. Each stop is reported once.
// Stops by SIGSTOP are not job control: someone stopped the command on
// purpose, and distlock keeps its lease for it meanwhile.
func jobStop(pid int) (syscall.Signal, bool) {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG, nil); err != nil {
		return 0, false
	}
	// siginfo_t for SIGCHLD: si_pid at byte 16, si_status at byte 24.
	b := (*[128]byte)(unsafe.Pointer(&info))
	if int32(binary.NativeEndian.Uint32(b[16:])) != int32(pid) || info.Code != cldStopped {
		return 0, false
	}
	switch sig := syscall.Signal(int32(binary.NativeEndian.Uint32(b[24:]))); sig {
	case syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
		return sig, true
	}
	return 0, false
}

// cldStopped is si_code CLD_STOPPED.
const cldStopped = 5
