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
// orphaned by the command are re-parented to us: we can then reap them and
// tell for sure when the group is gone (an unreaped zombie still counts).
func prepareReaping() {
	subreaper.Do(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// reapGroup collects every exited member of the group left to us.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
