//go:build linux

package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// A server's processes are its process group (the child leads one) and
// every descendant of a member, wherever it went: PostgreSQL's postmaster
// forks one backend per connection and each backend calls setsid(), so
// signalling the group alone would leave the backends serving.

// procStat is what /proc/<pid>/stat says of one process or thread.
type procStat struct {
	state      byte
	ppid, pgrp int
}

// serverProcs lists the live processes of the server whose child (and
// group leader) is leader.
func serverProcs(leader int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	stats := map[int]procStat{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readStat("/proc/" + e.Name() + "/stat")
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue // gone, or a zombie: nothing left to signal
		}
		stats[pid] = st
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var out []int
	seen := map[int]bool{}
	var add func(pid int)
	add = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		out = append(out, pid)
		for _, c := range children[pid] {
			add(c)
		}
	}
	for pid, st := range stats {
		if st.pgrp == leader {
			add(pid)
		}
	}
	return out, nil
}

// signalTree sends sig to the server's process group and to every other
// process of the server (see serverProcs), looking again until no new one
// turns up: with SIGSTOP a process stopped cannot fork any more.
func signalTree(leader int, sig syscall.Signal) error {
	if err := syscall.Kill(-leader, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	sent := map[int]bool{}
	for range 100 {
		procs, err := serverProcs(leader)
		if err != nil {
			return err
		}
		fresh := false
		for _, pid := range procs {
			if sent[pid] {
				continue
			}
			sent[pid] = true
			fresh = true
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
	return fmt.Errorf("the processes of server %d keep changing", leader)
}

// waitStopped waits until every thread of every process of the server is
// stopped. kill(SIGSTOP) returns before that: the kernel stops one thread,
// which then stops the others, and until they are scheduled they may still
// serve requests (seen with etcd on a busy machine).
func waitStopped(leader int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := allStopped(leader)
		if err != nil {
			return err
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the processes of server %d not stopped after %v", leader, timeout)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

// allStopped reports whether all threads of all the server's processes are
// stopped (or already dead).
func allStopped(leader int) (bool, error) {
	procs, err := serverProcs(leader)
	if err != nil {
		return false, err
	}
	for _, pid := range procs {
		dir := "/proc/" + strconv.Itoa(pid)
		tasks, err := os.ReadDir(dir + "/task")
		if err != nil {
			continue // exited meanwhile
		}
		for _, t := range tasks {
			st, ok := readStat(dir + "/task/" + t.Name() + "/stat")
			if !ok {
				continue // thread exited meanwhile
			}
			switch st.state {
			case 'T', 't', 'Z', 'X':
			default:
				return false, nil
			}
		}
	}
	return true, nil
}

// waitGone waits until none of pids is alive (a zombie counts as gone: it
// holds nothing but its pid).
func waitGone(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for {
			st, ok := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
			if !ok || st.state == 'Z' || st.state == 'X' {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d still alive %v after SIGKILL", pid, timeout)
			}
			time.Sleep(time.Millisecond) // poll interval
		}
	}
	return nil
}

// readStat reads a /proc stat file: "pid (comm) state ppid pgrp ...",
// where comm may contain spaces and ')'.
func readStat(path string) (procStat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp}, true
}
