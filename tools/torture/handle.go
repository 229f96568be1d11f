package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// onceHandle is one round of contender i in mode handle: `distlock
// acquire` (one process) prints a handle and a token; the probe (another
// process) runs the section with that token and, half-way, extends the
// lock with `distlock extend` (a third); then `distlock release` (a
// fourth) ends it. Nothing renews a handle's lock between those steps.
func (w *workload) onceHandle(i int) {
	acq := exec.Command(w.bin, "--backend", w.url(i), "--connect-timeout", "2s", "acquire", "--key", w.key,
		"--ttl", w.ttl.String(), "--wait", "3s", "--quiet")
	var out bytes.Buffer
	acq.Stdout = &out
	code := w.runTracked(i, acq, "acquire")
	if code != 0 {
		if code != 75 {
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	env := parseHandleLines(out.String())
	probe := exec.Command(w.self, "probe", "--addr", w.regAddr, "--contender", strconv.Itoa(i),
		"--launched", strconv.FormatInt(time.Now().UnixNano(), 10),
		"--extend-with", w.bin, "--backend", w.url(i))
	probe.Env = append(os.Environ(), env...)
	if w.runTracked(i, probe, "probe") == 137 {
		return // the job was killed (kill-holder): nobody releases, the lease lapses
	}
	rel := exec.Command(w.bin, "--backend", w.url(i), "--connect-timeout", "2s", "release")
	rel.Env = append(os.Environ(), env...)
	w.runTracked(i, rel, "release")
}

// runTracked runs c as contender i's current process (the one a
// kill-holder or stop-holder fault signals) and counts its exit status
// under what ("": the exit status alone); -1 when c did not start.
func (w *workload) runTracked(i int, c *exec.Cmd, what string) int {
	if what != "" {
		what += " "
	}
	w.mu.Lock()
	err := c.Start()
	if err == nil {
		w.cur[i] = c
	}
	w.mu.Unlock()
	if err != nil {
		w.count(what + "start: " + err.Error())
		time.Sleep(100 * time.Millisecond)
		return -1
	}
	err = c.Wait()
	w.mu.Lock()
	delete(w.cur, i)
	w.mu.Unlock()
	code := exitCode(c, err)
	w.count(what + strconv.Itoa(code))
	return code
}

// parseHandleLines keeps the DISTLOCK_HANDLE= and DISTLOCK_TOKEN= lines
// acquire printed, as environment entries.
func parseHandleLines(s string) []string {
	var env []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "export "))
		if strings.HasPrefix(line, "DISTLOCK_HANDLE=") || strings.HasPrefix(line, "DISTLOCK_TOKEN=") {
			env = append(env, strings.Trim(line, "'\""))
		}
	}
	return env
}
