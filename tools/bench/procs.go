package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What the scale mode reads of a process in /proc (Linux only).

// privateKB is Private_Clean + Private_Dirty of /proc/PID/smaps_rollup,
// and Private_Dirty alone: the pages only this process maps (a forked
// helper's pages still shared copy-on-write with distlock count as
// shared, in neither). A lone distlock's binary pages are private clean;
// the binary of many is shared by all.
func privateKB(pid int) (private, dirty int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	return parsePrivate(string(b))
}

// parsePrivate sums the Private_Clean and Private_Dirty lines (kB) of a
// smaps_rollup, and returns Private_Dirty alone too.
func parsePrivate(s string) (private, dirty int64, err error) {
	found := 0
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "Private_Clean" && name != "Private_Dirty") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("smaps_rollup: %q", line)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("smaps_rollup: %q", line)
		}
		private += v
		if name == "Private_Dirty" {
			dirty = v
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("smaps_rollup: no Private_Clean and Private_Dirty")
	}
	return private, dirty, nil
}

// cpuTime is the time every thread of pid has run on a CPU (the first
// field of each /proc/PID/task/TID/schedstat, in ns): finer than the
// 10 ms ticks of /proc/PID/stat, which a holder's renewals fit within.
// A thread that exited meanwhile is not counted (Go's threads live as long
// as the process).
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("process %d: no schedstat", pid)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		d, err := parseSchedstat(string(b))
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// parseSchedstat is the first field of a schedstat line ("ns-on-cpu
// ns-waiting timeslices").
func parseSchedstat(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat: %q", s)
	}
	v, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat: %q", s)
	}
	return time.Duration(v), nil
}

// procStat is what the scale mode reads of /proc/PID/stat.
type procStat struct {
	comm  string
	ppid  int
	ticks int64 // utime + stime + cutime + cstime: itself and its reaped children
}

// parseStat reads a /proc/PID/stat line. comm is between the first '('
// and the last ')', and may hold spaces and parentheses itself.
func parseStat(s string) (procStat, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return procStat{}, fmt.Errorf("stat: %q", s)
	}
	f := strings.Fields(s[end+2:])
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat: %q", s)
	}
	st := procStat{comm: s[open+1 : end]}
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("stat: %q", s)
	}
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat: %q", s)
		}
		st.ticks += n
	}
	return st, nil
}

// procTable is every process's stat at one moment.
type procTable map[int]procStat

func readProcs() procTable {
	t := procTable{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, err := parseStat(string(b)); err == nil {
			t[pid] = st
		}
	}
	return t
}

// tree is root and every descendant of it (root first).
func (t procTable) tree(root int) []int {
	children := map[int][]int{}
	for pid, st := range t {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// helpers is a distlock process and its helper processes among its
// descendants: the group watcher and its pin, which name themselves
// "distlock-watch" and "distlock-pin" (comm), unlike the command.
func (t procTable) helpers(pid int) []int {
	var out []int
	for _, p := range t.tree(pid) {
		if p == pid || strings.HasPrefix(t[p].comm, "distlock") {
			out = append(out, p)
		}
	}
	return out
}

// ticks is the CPU time of pids (with their reaped children) in clock
// ticks.
func (t procTable) ticks(pids []int) int64 {
	var sum int64
	for _, p := range pids {
		sum += t[p].ticks
	}
	return sum
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTick = 10 * time.Millisecond
