package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// HolderStat is an idle holder after the watch period.
type HolderStat struct {
	RSSkB          int64   `json:"rss_kb"`
	AnonkB         int64   `json:"rss_anon_kb"` // private: RSS less the binary's pages (shared by every distlock)
	CPUms          float64 `json:"cpu_ms"`
	WatchedSeconds float64 `json:"watched_seconds"`
	TTLSeconds     float64 `json:"ttl_seconds"`
	// Renewals is the holder's "renewed" log lines (-v) in the window.
	Renewals int `json:"renewals"`
	// RenewalsPerTTL3 is Renewals per ttl/3 watched (the target: ≤ 1).
	RenewalsPerTTL3 float64 `json:"renewals_per_ttl_third"`
	Requests        *Count  `json:"engine_requests,omitempty"` // nil: not counted
	ReqPerRenewal   float64 `json:"engine_requests_per_renewal,omitempty"`
}

// holder starts a run (-v) that sleeps, waits for its first renewal, then
// watches it for d from midway between two renewals: the renewals it logs
// and the engine requests made meanwhile, then its RSS and CPU time.
func holder(bin, key string, e engine, d time.Duration) (HolderStat, error) {
	const ttl = 3 * time.Second
	c := exec.Command(bin, "-v", "--backend", e.url, "run", "--key", strings.NewReplacer(" [", "-", "]", "").Replace(key), "--ttl", ttl.String(), "--", "sleep", strconv.Itoa(int((d+10*time.Second)/time.Second)))
	stderr, err := c.StderrPipe()
	if err != nil {
		return HolderStat{}, err
	}
	if err := c.Start(); err != nil {
		return HolderStat{}, err
	}
	var (
		mu       sync.Mutex
		renewed  []time.Time
		first    = make(chan struct{})
		firstOne sync.Once
		log      strings.Builder
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			now := time.Now()
			mu.Lock()
			if log.Len() < 1<<16 {
				fmt.Fprintln(&log, s.Text())
			}
			if strings.Contains(s.Text(), " msg=renewed ") {
				renewed = append(renewed, now)
				firstOne.Do(func() { close(first) })
			}
			mu.Unlock()
		}
	}()
	defer stopRun(c, done)
	select {
	case <-first:
	case <-done:
		return HolderStat{}, fmt.Errorf("the holder ended: %s", log.String())
	case <-time.After(2 * ttl):
		mu.Lock()
		defer mu.Unlock()
		return HolderStat{}, fmt.Errorf("no renewal logged in %v: %s", 2*ttl, log.String())
	}
	time.Sleep(ttl / 6) // midway between renewals
	var w window
	if e.counter != nil {
		if w, err = e.counter.begin(); err != nil {
			return HolderStat{}, err
		}
	}
	t0 := time.Now()
	time.Sleep(d)
	t1 := time.Now()
	h := HolderStat{WatchedSeconds: round2(t1.Sub(t0).Seconds()), TTLSeconds: ttl.Seconds()}
	if w != nil {
		n, err := w.end()
		if err != nil {
			return h, err
		}
		h.Requests = &n
	}
	mu.Lock()
	h.Renewals = countWithin(renewed, t0, t1)
	mu.Unlock()
	h.RenewalsPerTTL3 = round2(float64(h.Renewals) / (t1.Sub(t0).Seconds() / (ttl / 3).Seconds()))
	if h.Requests != nil && h.Renewals > 0 {
		h.ReqPerRenewal = round2(float64(h.Requests.Requests) / float64(h.Renewals))
	}
	readProc(c.Process.Pid, &h)
	return h, nil
}

// readProc fills in h's memory (RSS, anonymous RSS) and CPU time from
// /proc/<pid>; what cannot be read is left 0.
func readProc(pid int, h *HolderStat) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				h.RSSkB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
			if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
				h.AnonkB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		h.CPUms = float64(ut+st) * 10 // clock ticks of 10ms (USER_HZ 100)
	}
}

// countWithin counts the times in ts that fall in [t0, t1).
func countWithin(ts []time.Time, t0, t1 time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(t0) && t.Before(t1) {
			n++
		}
	}
	return n
}

// stopRun ends a run with SIGTERM (it ends its command and releases the
// lock), SIGKILL after 10 s, and waits for its log reader (done).
func stopRun(c *exec.Cmd, done <-chan struct{}) {
	c.Process.Signal(syscall.SIGTERM)
	t := time.AfterFunc(10*time.Second, func() { c.Process.Kill() })
	select {
	case <-done:
	case <-time.After(15 * time.Second):
	}
	c.Wait()
	t.Stop()
}
