//go:build unix && !linux

package server

import "syscall"

// sysProcAttr puts the child in its own process group. There is no
// Pdeathsig outside Linux: a test process that dies without Close leaves
// the server running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
