//go:build unix && !linux

package server

import (
	"errors"
	"syscall"
	"time"
)

// Without /proc a server's processes are its process group only (a
// PostgreSQL backend, which leaves the group, is not reached), and Stop is
// best effort: a thread may still run briefly after kill(SIGSTOP) returns.

func serverProcs(leader int) ([]int, error) { return nil, nil }

func signalTree(leader int, sig syscall.Signal) error {
	if err := syscall.Kill(-leader, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func waitStopped(leader int, timeout time.Duration) error { return nil }

func waitGone(pids []int, timeout time.Duration) error { return nil }
