//go:build !linux

package child

import (
	"errors"
	"syscall"
)

// Outside Linux there is no Pdeathsig (a SIGKILLed distlock leaves its
// child to the watcher) and no /proc to list a group's members: the
// command leads its own group and the watcher watches it from outside,
// without a pin (distlock could not tell the pin from the command's
// processes), so the watcher's kill could reach a group that took a
// vanished group's number. Job control is reduced to catching SIGTSTP;
// the terminal is not handed over.

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func prepareReaping() {}

type terminal struct{ fd int }

func openTerminal() *terminal                { return nil }
func (t *terminal) foreground() int          { return -1 }
func (t *terminal) ours() bool               { return false }
func (t *terminal) setForeground(int) error  { return nil }
func (t *terminal) close()                   {}
func jobStop(pid int) (syscall.Signal, bool) { return 0, false }

// watcherLeads: the watcher watches the command's group from its own.
const watcherLeads = false

// groupRunning: kill(2) tells whether the group exists (EPERM: a member
// we may not signal, alive).
func (p *Process) groupRunning() bool {
	return !errors.Is(syscall.Kill(-p.pgid, 0), syscall.ESRCH)
}

func (p *Process) knownUnsignallable() []int { return nil }
func (p *Process) unsignallable() []int      { return nil }
func (p *Process) runningCount() int         { return 0 }

// allStopped: SIGSTOP the whole group.
func (p *Process) allStopped(force bool) bool {
	syscall.Kill(-p.pgid, syscall.SIGSTOP)
	return true
}

func (p *Process) signalGroup(sig syscall.Signal) error { return syscall.Kill(-p.pgid, sig) }

func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// GroupTracked: outside Linux the group is known by kill(2) alone (see
// groupRunning), with no /proc to trust or not.
func GroupTracked() bool { return true }

func (p *Process) termUnseen() {}
