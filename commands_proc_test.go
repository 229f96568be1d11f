package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/distlock/distlock/internal/child"
)

// procStat is what the harness reads of /proc/PID/stat.
type procStat struct {
	state byte // R, S, D, T (stopped), t (traced), Z (zombie), ...
	ppid  int
	pgrp  int
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 3 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp}, true
}

// groupMembers lists the running (not zombie) processes of process group
// pgid, leaving out except.
func groupMembers(pgid int, except ...int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var pids []int
next:
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		for _, e := range except {
			if pid == e {
				continue next
			}
		}
		if st, ok := readProcStat(pid); ok && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procstate [-t D] PIDFILE STATES: wait until the process in PIDFILE is in
// one of STATES, the state letters of /proc/PID/stat: T is stopped, R and
// S are running or runnable.
func cmdProcState(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: procstate [-t D] PIDFILE STATES")
	}
	pid := readPID(ts, args[0])
	deadline := time.Now().Add(timeout)
	for {
		st, ok := readProcStat(pid)
		if !ok {
			ts.Fatalf("process %d (%s) is gone, not in state %s", pid, args[0], args[1])
		}
		if strings.IndexByte(args[1], st.state) >= 0 {
			return
		}
		// A shell whose vforked child was stopped before its exec waits in
		// the kernel (D) for that child; with a SIGSTOP pending it stops
		// the moment it leaves D, so it counts as stopped, as distlock
		// counts it (internal/child, stopComing).
		if st.state == 'D' && strings.IndexByte(args[1], 'T') >= 0 && sigstopPending(pid) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("process %d (%s) not in state %s after %s: it is in state %c", pid, args[0], args[1], timeout, st.state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// numberUse says how process number n is used: "free", "zombie" (only by
// exited processes not yet reaped), or "live" (as the pid, process group
// or session of a running process).
func numberUse(n int) string {
	d, err := os.Open("/proc")
	if err != nil {
		return "live"
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	use := "free"
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		st, ok := readProcStat(pid)
		if !ok {
			continue
		}
		sid, _ := unix.Getsid(pid)
		if pid != n && st.pgrp != n && sid != n {
			continue
		}
		if st.state != 'Z' && st.state != 'X' {
			return "live"
		}
		use = "zombie"
	}
	return use
}

// running PIDFILE: the process in PIDFILE is alive: not a zombie, and no
// SIGKILL pending (kill(2) marks it at once; the death itself follows
// when the process next runs, maybe after whoever sent it has exited).
func cmdRunning(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] running PIDFILE")
	}
	pid := readPID(ts, args[0])
	switch up := alive(pid) && !killPending(pid); {
	case up && neg:
		ts.Fatalf("process %d (%s) is running", pid, args[0])
	case !up && !neg:
		ts.Fatalf("process %d (%s) is not running", pid, args[0])
	}
}

// killPending reports whether process pid has a SIGKILL pending.
func killPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(syscall.SIGKILL-1)) != 0 {
			return true
		}
	}
	return false
}

// findWatcher returns the pid of the group watcher of process group pgid:
// the parent of the group's pin (the distlock process run with PinArg that
// leads it), or (as distlock once ran it) a watcher whose argument is the
// group's number.
func findWatcher(pgid int) int {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pgid) + "/cmdline"); err == nil && bytes.Contains(b, []byte("\x00"+child.PinArg+"\x00")) {
		if st, ok := readProcStat(pgid); ok {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(st.ppid) + "/cmdline"); err == nil && bytes.Contains(b, []byte("\x00"+child.WatchArg+"\x00")) {
				return st.ppid
			}
		}
	}
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	want := "\x00" + child.WatchArg + "\x00" + strconv.Itoa(pgid) + "\x00"
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/cmdline")
		if err == nil && bytes.HasSuffix(b, []byte(want)) && alive(pid) {
			return pid
		}
	}
	return 0
}

// pgid PIDFILE PGIDFILE: write the process group of the process in
// PIDFILE to PGIDFILE.
func cmdPgid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pgid PIDFILE PGIDFILE")
	}
	st, ok := readProcStat(readPID(ts, args[0]))
	if !ok {
		ts.Fatalf("no process in %s", args[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strconv.Itoa(st.pgrp)+"\n"), 0o644))
}

// watcher find PGIDFILE WATCHERPIDFILE: find the group watcher of the
// process group in PGIDFILE and write its pid to WATCHERPIDFILE.
// watcher freeze PGIDFILE WATCHERPIDFILE: the same, and freeze it (the
// cgroup freezer; [freezer]), so that a scenario can change the world
// before it acts. Not SIGSTOP: when distlock dies, the kernel continues a
// stopped process whose group it orphans (SIGHUP, SIGCONT); a frozen one
// stays put until it is thawed.
// watcher thaw WATCHERPIDFILE: thaw it.
func cmdWatcher(ts *testscript.TestScript, neg bool, args []string) {
	switch {
	case !neg && len(args) == 3 && (args[0] == "find" || args[0] == "freeze"):
		pgid := readPID(ts, args[1])
		var pid int
		waitUntil(ts, "the group watcher of "+args[1], defaultWait, func() bool {
			pid = findWatcher(pgid)
			return pid != 0
		})
		if args[0] == "freeze" {
			thaw, err := freeze(pid)
			ts.Check(err)
			ts.Defer(thaw)
			harnessOf(ts).thaw[pid] = thaw
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(strconv.Itoa(pid)+"\n"), 0o644))
	case !neg && len(args) == 2 && args[0] == "thaw":
		pid := readPID(ts, args[1])
		thaw, ok := harnessOf(ts).thaw[pid]
		if !ok {
			ts.Fatalf("process %d was not frozen", pid)
		}
		thaw()
	default:
		ts.Fatalf("usage: watcher find|freeze PGIDFILE WATCHERPIDFILE | watcher thaw WATCHERPIDFILE")
	}
}

// idlepin PINFILE [DISTLOCKPIDFILE]: wait for the pin of a group watcher
// started by a distlock of this script (run from its directory) whose
// group holds no process but the pin: a watcher prepared while distlock
// waits for the lock. Write the pin's pid to PINFILE (and its distlock's
// to DISTLOCKPIDFILE).
// ! idlepin: wait until there is none (let go with the wait).
func cmdIdlePin(ts *testscript.TestScript, neg bool, args []string) {
	if (neg && len(args) != 0) || (!neg && len(args) != 1 && len(args) != 2) {
		ts.Fatalf("usage: idlepin PINFILE [DISTLOCKPIDFILE] | ! idlepin")
	}
	dir, err := filepath.EvalSymlinks(ts.MkAbs("."))
	ts.Check(err)
	var pin, owner int
	find := func() bool {
		pin, owner = 0, 0
		d, err := os.Open("/proc")
		if err != nil {
			return false
		}
		defer d.Close()
		names, _ := d.Readdirnames(-1)
		for _, n := range names {
			pid, err := strconv.Atoi(n)
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + n + "/cmdline")
			if err != nil || !bytes.Contains(b, []byte("\x00"+child.PinArg+"\x00")) {
				continue
			}
			if cwd, err := os.Readlink("/proc/" + n + "/cwd"); err != nil || cwd != dir {
				continue
			}
			st, ok := readProcStat(pid)
			if !ok || st.pgrp != pid || st.state == 'Z' || st.state == 'X' || len(groupMembers(pid, pid)) > 0 {
				continue
			}
			pin = pid
			if w, ok := readProcStat(st.ppid); ok {
				owner = w.ppid
			}
			return true
		}
		return false
	}
	if neg {
		waitUntil(ts, "no idle pin of a group watcher left", defaultWait, func() bool { return !find() })
		return
	}
	waitUntil(ts, "a group watcher prepared while waiting", defaultWait, find)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strconv.Itoa(pin)+"\n"), 0o644))
	if len(args) == 2 {
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strconv.Itoa(owner)+"\n"), 0o644))
	}
}

// freezerDir finds a cgroup freezer: cgroup v2 (cgroup.freeze) or the v1
// freezer controller; v2 tells which. "" when there is none.
func freezerDir() (dir string, v2 bool) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "", false
	}
	var v1 string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		switch {
		case f[2] == "cgroup2":
			return f[1], true
		case f[2] == "cgroup" && strings.Contains(","+f[3]+",", ",freezer,"):
			v1 = f[1]
		}
	}
	return v1, false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// haveFreezer: the harness can freeze a process (root and a freezer).
func haveFreezer() bool {
	dir, _ := freezerDir()
	return os.Geteuid() == 0 && dir != ""
}

// havePidNamespace: `unshare -pf` can start a process in a pid namespace
// of its own (util-linux's unshare, and the privilege it needs: root
// outside a container that forbids it).
var havePidNamespace = sync.OnceValue(func() bool {
	return exec.Command("unshare", "-pf", "true").Run() == nil
})

// freeze puts process pid in a new frozen cgroup; thaw thaws it, moves it
// back to the root cgroup and removes the new one (once; later calls do
// nothing).
func freeze(pid int) (thaw func(), err error) {
	root, v2 := freezerDir()
	if root == "" {
		return nil, fmt.Errorf("no cgroup freezer")
	}
	dir := filepath.Join(root, fmt.Sprintf("distlock-test-%d-%d", os.Getpid(), pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	procs, state, frozen, thawed := "tasks", "freezer.state", "FROZEN", "THAWED"
	if v2 {
		procs, state, frozen, thawed = "cgroup.procs", "cgroup.freeze", "1", "0"
	}
	write := func(file, v string) error { return os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644) }
	done := false
	thaw = func() {
		if done {
			return
		}
		done = true
		write(state, thawed)
		os.WriteFile(filepath.Join(root, procs), []byte(strconv.Itoa(pid)), 0o644)
		// A process that exits as it is thawed may be counted in the
		// cgroup a moment longer (EBUSY).
		for i := 0; i < 200 && os.Remove(dir) != nil && exists(dir); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := write(procs, strconv.Itoa(pid)); err != nil {
		thaw()
		return nil, err
	}
	if err := write(state, frozen); err != nil {
		thaw()
		return nil, err
	}
	// Frozen once the cgroup says so.
	deadline := time.Now().Add(defaultWait)
	for {
		var b []byte
		if v2 {
			b, _ = os.ReadFile(filepath.Join(dir, "cgroup.events"))
			if strings.Contains(string(b), "frozen 1") {
				return thaw, nil
			}
		} else if b, _ = os.ReadFile(filepath.Join(dir, state)); strings.TrimSpace(string(b)) == frozen {
			return thaw, nil
		}
		if time.Now().After(deadline) {
			thaw()
			return nil, fmt.Errorf("process %d not frozen after %s", pid, defaultWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// decoy PGIDFILE DECOYPIDFILE: start an unrelated process (a sleep in a
// process group of its own) and try hard to give it the number of the
// process group in PGIDFILE, as a busy machine eventually would once that
// number is free: /proc/sys/kernel/ns_last_pid makes the kernel hand out
// a chosen number next (root only: guard it with [root]). It waits for
// zombies that hold the number to be reaped; a running process that holds
// it (as its pid, group or session) will not let go soon: then the decoy
// gets another number.
// The decoy's pid goes to DECOYPIDFILE; it is killed when the script ends.
func cmdDecoy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: decoy PGIDFILE DECOYPIDFILE")
	}
	pgid := readPID(ts, args[0])
	const lastPID = "/proc/sys/kernel/ns_last_pid"
	if f, err := os.OpenFile(lastPID, os.O_WRONLY, 0); err != nil {
		ts.Fatalf("decoy needs to write %s (guard it with [root]): %v", lastPID, err)
	} else {
		f.Close()
	}
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "600")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		ts.Check(c.Start())
		return c
	}
	var c *exec.Cmd
	deadline := time.Now().Add(defaultWait)
	for c == nil && time.Now().Before(deadline) {
		switch numberUse(pgid) {
		case "live":
			// A running process has the number (as its pid or group):
			// it will not be free soon.
			ts.Logf("number %d is in use by a running process: the decoy cannot take it", pgid)
			deadline = time.Time{}
			continue
		case "zombie":
			time.Sleep(10 * time.Millisecond) // until it is reaped
			continue
		}
		for try := 0; try < 50; try++ {
			ts.Check(os.WriteFile(lastPID, []byte(strconv.Itoa(pgid-1)), 0o644))
			d := start()
			if d.Process.Pid == pgid {
				ts.Logf("the decoy took number %d, the old process group's", pgid)
				c = d
				break
			}
			d.Process.Kill()
			d.Wait()
		}
	}
	if c == nil {
		c = start()
	}
	ts.Defer(func() {
		c.Process.Kill()
		c.Wait()
	})
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strconv.Itoa(c.Process.Pid)+"\n"), 0o644))
}

// flockrace [-limit N] COUNT KEY: COUNT times over, on the file engine,
// race a waiter blocked in flock(2) on KEY's lock file (slot 0's with
// -limit) against a holder that is SIGKILLed while its command has a
// background grandchild in its process group. The kernel wakes the waiter
// the moment the lock's last open descriptor closes; at that moment no
// process of the old command's group (the group watcher aside, which is
// exiting) may still be running. Fails with the number of trials in which
// one was. DISTLOCK_TEST_STRESS_N in the test's environment overrides COUNT.
// With -early the holder is SIGKILLed instead the moment its group watcher
// holds the lock file, handed to it just before the command starts
// (flockEarlyTrial): the command has not started yet, or has only just.
func cmdFlockRace(ts *testscript.TestScript, neg bool, args []string) {
	limit, early := 1, false
	if len(args) > 2 && args[0] == "-limit" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit, args = n, args[2:]
	}
	if len(args) > 2 && args[0] == "-early" {
		early, args = true, args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flockrace [-limit N | -early] COUNT KEY")
	}
	count, err := strconv.Atoi(args[0])
	ts.Check(err)
	if s := os.Getenv("DISTLOCK_TEST_STRESS_N"); s != "" {
		count, err = strconv.Atoi(s)
		ts.Check(err)
	}
	key := args[1]
	dir, ok := strings.CutPrefix(ts.Getenv("DISTLOCK_BACKEND"), "file://")
	if !ok {
		ts.Fatalf("flockrace needs the file engine")
	}
	lockFile := filepath.Join(dir, "distlock#"+key+".lock")
	if limit > 1 {
		lockFile = filepath.Join(dir, "distlock#"+key+"#slot0.lock")
	}
	bad, before := 0, 0
	var slowest, total time.Duration
	for i := 0; i < count; i++ {
		var msg string
		var took time.Duration
		if early {
			var started bool
			msg, took, started = flockEarlyTrial(ts, key, lockFile, i)
			if !started {
				before++
			}
		} else {
			msg, took = flockTrial(ts, key, limit, lockFile, i)
		}
		if msg != "" {
			bad++
			ts.Logf("trial %d: %s", i, msg)
		}
		slowest, total = max(slowest, took), total+took
	}
	ts.Logf("flockrace: %d trials, %d in which the waiter got the lock while the old command's group still ran; the waiter got the lock %s after the kill on average, %s at most",
		count, bad, (total / time.Duration(max(count, 1))).Round(time.Millisecond), slowest.Round(time.Millisecond))
	if early {
		ts.Logf("flockrace -early: in %d of %d trials the holder was killed before its command had written its pid", before, count)
	}
	if bad > 0 {
		ts.Fatalf("in %d of %d trials the waiter got the lock while a process of the SIGKILLed holder's command still ran", bad, count)
	}
}

// flockTrial is one trial of flockrace; it returns what went wrong, if
// anything did, and how long after the kill the waiter got the lock.
func flockTrial(ts *testscript.TestScript, key string, limit int, lockFile string, i int) (string, time.Duration) {
	tdir := ts.MkAbs(fmt.Sprintf("race-%s-%d", key, i))
	ts.Check(os.MkdirAll(tdir, 0o755))
	script := `echo $$ > cmd.pid; sleep 60 >/dev/null 2>&1 & echo $! > gc.pid; touch started; wait`
	holder := scriptCommand(ts, "distlock", "run", "--key", key, "--limit", strconv.Itoa(limit), "--ttl", "3s", "--", "sh", "-c", script)
	holder.Dir = tdir
	ts.Check(holder.Start())
	defer holder.Wait()
	started := filepath.Join(tdir, "started")
	waitUntil(ts, "trial "+strconv.Itoa(i)+" started", defaultWait, func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	cmdPID := readPID(ts, filepath.Join(tdir, "cmd.pid"))
	gcPID := readPID(ts, filepath.Join(tdir, "gc.pid"))
	st0, ok := readProcStat(cmdPID)
	if !ok {
		ts.Fatalf("trial %d: the command is gone", i)
	}
	pgid := st0.pgrp
	defer func() {
		// Whatever happened, leave nothing of this trial behind.
		syscall.Kill(gcPID, syscall.SIGKILL)
	}()

	f, err := os.OpenFile(lockFile, os.O_RDWR, 0)
	ts.Check(err)
	defer f.Close()
	var st syscall.Stat_t
	ts.Check(syscall.Fstat(int(f.Fd()), &st))
	got := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				got <- err
				return
			}
		}
	}()
	// The waiter must be blocked in the kernel before the holder dies.
	waitUntil(ts, "the waiter blocked in flock", defaultWait, func() bool { return flockBlocked(os.Getpid(), st.Ino) })
	ts.Check(holder.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	var msg string
	var took time.Duration
	select {
	case err := <-got:
		took = time.Since(killed)
		ts.Check(err)
		// The lock is ours: nothing of the old command may run now.
		var left []string
		for _, pid := range []int{cmdPID, gcPID} {
			if st, ok := readProcStat(pid); ok && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
				left = append(left, strconv.Itoa(pid))
			}
		}
		// Anything else in the group (the watcher is not in it, but it
		// was once: it closes its copy of the lock's descriptor as it
		// exits).
		for _, pid := range groupMembers(pgid, cmdPID, gcPID, findWatcher(pgid)) {
			left = append(left, strconv.Itoa(pid))
		}
		if len(left) > 0 {
			msg = "the waiter got the lock while pid " + strings.Join(left, ", ") + " of the old command's group still ran"
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	case <-time.After(defaultWait):
		ts.Fatalf("trial %d: the waiter did not get the lock within %s of the holder's death", i, defaultWait)
	}
	// Before the next trial, the old grandchild must be gone.
	deadline := time.Now().Add(defaultWait)
	for alive(gcPID) {
		if time.Now().After(deadline) {
			syscall.Kill(gcPID, syscall.SIGKILL)
			return fmt.Sprintf("the holder's grandchild %d was still alive %s after the holder's death", gcPID, defaultWait), took
		}
		time.Sleep(time.Millisecond)
	}
	return msg, took
}

// flockEarlyTrial is one trial of flockrace -early. The lock is ours
// first, so the holder waits (forking its group watcher meanwhile); we let
// it go, watch the watcher's descriptors, and SIGKILL the holder the
// moment the watcher holds the lock file: distlock hands it over just
// before it starts the command. Then we wait for the lock, which must not
// come while a process of the holder's group (led by the watcher's pin)
// runs. It returns what went wrong, how long after the kill the lock
// came, and whether the command had started (written its pid) by the
// kill.
func flockEarlyTrial(ts *testscript.TestScript, key, lockFile string, i int) (string, time.Duration, bool) {
	tdir := ts.MkAbs(fmt.Sprintf("early-%s-%d", key, i))
	ts.Check(os.MkdirAll(tdir, 0o755))
	ours, err := os.OpenFile(lockFile, os.O_RDWR, 0)
	ts.Check(err)
	defer ours.Close()
	ts.Check(syscall.Flock(int(ours.Fd()), syscall.LOCK_EX))
	var lockSt syscall.Stat_t
	ts.Check(syscall.Fstat(int(ours.Fd()), &lockSt))
	script := `echo $$ > cmd.pid; sleep 60 >/dev/null 2>&1 & echo $! > gc.pid; wait`
	holder := scriptCommand(ts, "distlock", "run", "--key", key, "--ttl", "3s", "--wait", "20s", "--", "sh", "-c", script)
	holder.Dir = tdir
	ts.Check(holder.Start())
	defer holder.Wait()
	defer holder.Process.Kill()
	var watcher, pin int
	waitUntil(ts, "trial "+strconv.Itoa(i)+": the waiting holder's group watcher", defaultWait, func() bool {
		watcher, pin = watcherOf(holder.Process.Pid)
		return pin != 0
	})
	defer func() {
		// Leave nothing of this trial behind.
		if gc, err := os.ReadFile(filepath.Join(tdir, "gc.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(gc))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	fdDir := "/proc/" + strconv.Itoa(watcher) + "/fd"
	holds := func() bool {
		ents, _ := os.ReadDir(fdDir)
		for _, e := range ents {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(fdDir, e.Name()), &st) == nil && st.Dev == lockSt.Dev && st.Ino == lockSt.Ino {
				return true
			}
		}
		return false
	}
	ts.Check(syscall.Flock(int(ours.Fd()), syscall.LOCK_UN))
	deadline := time.Now().Add(defaultWait)
	for !holds() {
		if time.Now().After(deadline) {
			ts.Fatalf("trial %d: the holder's watcher did not get the lock file within %s", i, defaultWait)
		}
	}
	ts.Check(holder.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	_, err = os.Stat(filepath.Join(tdir, "cmd.pid"))
	started := err == nil
	got := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(int(ours.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				got <- err
				return
			}
		}
	}()
	var msg string
	var took time.Duration
	select {
	case err := <-got:
		took = time.Since(killed)
		ts.Check(err)
		if left := groupMembers(pin); len(left) > 0 {
			msg = fmt.Sprintf("the waiter got the lock while pids %v of the old command's group still ran", left)
		}
		syscall.Flock(int(ours.Fd()), syscall.LOCK_UN)
	case <-time.After(defaultWait):
		ts.Fatalf("trial %d: the waiter did not get the lock within %s of the holder's death", i, defaultWait)
	}
	return msg, took, started
}

// watcherOf finds the group watcher that distlock pid forked and the
// watcher's pin (0, 0 if there is none yet).
func watcherOf(pid int) (watcher, pin int) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	parent := map[int]int{}
	for _, n := range names {
		p, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, ok := readProcStat(p); ok {
			parent[p] = st.ppid
		}
	}
	isA := func(p int, arg string) bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		return err == nil && bytes.Contains(b, []byte("\x00"+arg+"\x00"))
	}
	for p, pp := range parent {
		if pp == pid && isA(p, child.WatchArg) {
			watcher = p
		}
	}
	for p, pp := range parent {
		if watcher != 0 && pp == watcher && isA(p, child.PinArg) {
			return watcher, p
		}
	}
	return 0, 0
}

// flockBlocked reports whether process pid waits in flock(2) for the file
// with inode ino (a "->" line of /proc/locks).
func flockBlocked(pid int, ino uint64) bool {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// "3: -> FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF"
		if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && f[5] == strconv.Itoa(pid) && strings.HasSuffix(f[6], ":"+strconv.FormatUint(ino, 10)) {
			return true
		}
	}
	return false
}

// scriptCommand is exec.Command for a program in the script's PATH (where
// testscript puts distlock), run in the script's directory with the
// script's environment.
func scriptCommand(ts *testscript.TestScript, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			c.Path, c.Err = p, nil
			break
		}
	}
	c.Dir = ts.MkAbs(".")
	c.Env = scriptEnv(ts)
	return c
}

// envVarsKey is where Setup keeps the names of the script's environment.
type envVarsKey struct{}

// scriptEnv is the script's environment as it stands now: every variable
// Setup set, with the value the script gives it at this point.
func scriptEnv(ts *testscript.TestScript) []string {
	vars, _ := ts.Value(envVarsKey{}).([]string)
	seen := map[string]bool{}
	var env []string
	for _, kv := range vars {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// sigstopPending reports whether SIGSTOP is pending for process pid
// (SigPnd or ShdPnd of /proc/PID/status).
func sigstopPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	const stop = uint64(1) << (syscall.SIGSTOP - 1)
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64); err == nil && mask&stop != 0 {
			return true
		}
	}
	return false
}
