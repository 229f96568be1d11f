//go:build linux

package server

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel
// SIGKILL it when the forking thread (held for the child's lifetime, see
// launchLocked) exits, i.e. at the latest when the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
