//go:build !linux

package child

import "syscall"

// sysProcAttr puts the child in its own process group. Outside Linux there
// is no Pdeathsig: a SIGKILLed distlock leaves its child running.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func prepareReaping() {}

// reapGroup: without a subreaper, orphans go to init, which reaps them.
func reapGroup(pgid int) {}
