//go:build linux

package server

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// waitStopped waits until every thread of every process in process group
// pgid is stopped. kill(SIGSTOP) returns before that: the kernel stops one
// thread, which then stops the others, and until they are scheduled they
// may still serve requests (seen with etcd on a busy machine).
func waitStopped(pgid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := groupStopped(pgid)
		if err != nil {
			return err
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d not stopped after %v", pgid, timeout)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

// groupStopped reports whether all threads of all processes in pgid are
// stopped (or already dead).
func groupStopped(pgid int) (bool, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := "/proc/" + p.Name()
		_, pgrp, ok := readStat(dir + "/stat")
		if !ok || pgrp != pgid {
			continue // gone, unreadable or not ours
		}
		tasks, err := os.ReadDir(dir + "/task")
		if err != nil {
			continue // exited meanwhile
		}
		for _, t := range tasks {
			state, _, ok := readStat(dir + "/task/" + t.Name() + "/stat")
			if !ok {
				continue // thread exited meanwhile
			}
			switch state {
			case 'T', 't', 'Z', 'X':
			default:
				return false, nil
			}
		}
	}
	return true, nil
}

// readStat returns the state and process group from a /proc stat file:
// "pid (comm) state ppid pgrp ...", where comm may contain spaces and ')'.
func readStat(path string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}
