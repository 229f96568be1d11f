package child

import (
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own process group and has the kernel
// SIGKILL it if distlock dies (the forking thread is held; see Start).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

var subreaper sync.Once

// prepareReaping makes distlock a child subreaper, so that grandchildren
// orphaned by the command are re-parented to us and we reap them (see
// groupRunning) rather than leave their zombies behind.
func prepareReaping() {
	subreaper.Do(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}
