package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HandoverStat is one tool's handover latency and throughput, and the
// engine requests it took.
type HandoverStat struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	// SettledP50ms and SettledP99ms leave out the first handovers, up to
	// as many sections as there are contenders: the start-up storm of
	// every contender's first run at once.
	SettledP50ms float64 `json:"settled_p50_ms,omitempty"`
	SettledP99ms float64 `json:"settled_p99_ms,omitempty"`
	PerSecond    float64 `json:"sections_per_second"`
	Sections     int     `json:"sections"`
	Handovers    int     `json:"handovers"`
	// WaiterHandovers is, summed over the handovers, the runs waiting
	// across each: launched before the previous child ended, their own
	// child starting after the next one's.
	WaiterHandovers int `json:"waiter_handovers"`
	// WaitingRuns is the runs that waited across at least one handover.
	WaitingRuns int  `json:"waiting_runs"`
	Counted     bool `json:"counted"` // the engine's requests were counted
	// Requests is what the contended run made; Uncontended what the same
	// number of sections made with one contender.
	Requests    Count `json:"engine_requests"`
	Uncontended Count `json:"uncontended_engine_requests"`
	// ReqPerHandover is the raw figure: Requests / Handovers.
	ReqPerHandover float64 `json:"engine_requests_per_handover"`
	// ReqPerSection is Uncontended / Sections: what a section costs alone.
	ReqPerSection float64 `json:"uncontended_engine_requests_per_section"`
	// ReqPerWaiterPerHandover is (Requests − Uncontended) / WaiterHandovers.
	ReqPerWaiterPerHandover float64 `json:"engine_requests_per_waiter_per_handover"`
	// ReqPerWaitingRun is (Requests − Uncontended) / WaitingRuns: what
	// waiting costs a run, however many handovers it waits.
	ReqPerWaitingRun float64 `json:"extra_engine_requests_per_waiting_run"`
}

// section is one child's critical section, from its stamps.
type section struct {
	contender, run int
	start, end     int64 // ns
}

// contention is one contended run's sections (by start) and the time
// each run was launched, by contender and run.
type contention struct {
	sections []section
	launched [][]int64 // ns
	elapsed  time.Duration
}

// handover runs n contenders, each taking the lock `sections` times in a
// row, every child stamping its contender, run, start and end. With a
// counter, the same number of sections is run first by one contender,
// uncontended, to count what a section costs alone.
func handover(tmp, name string, prefix []string, n, sections int, ctr counter) (HandoverStat, error) {
	var h HandoverStat
	var alone Count
	if ctr != nil {
		w, err := ctr.begin()
		if err != nil {
			return h, err
		}
		if _, err := contend(tmp, name, prefix, 1, n*sections); err != nil {
			return h, fmt.Errorf("uncontended: %w", err)
		}
		if alone, err = w.end(); err != nil {
			return h, err
		}
	}
	var w window
	if ctr != nil {
		var err error
		if w, err = ctr.begin(); err != nil {
			return h, err
		}
	}
	c, err := contend(tmp, name, prefix, n, sections)
	if err != nil {
		return h, err
	}
	var gaps []time.Duration
	for k := 0; k+1 < len(c.sections); k++ {
		gaps = append(gaps, time.Duration(c.sections[k+1].start-c.sections[k].end))
	}
	h.WaiterHandovers, h.WaitingRuns = c.waiters()
	if len(gaps) > n {
		settled := slices.Sorted(slices.Values(gaps[n:]))
		h.SettledP50ms, h.SettledP99ms = ms(quantile(settled, 0.5)), ms(quantile(settled, 0.99))
	}
	slices.Sort(gaps)
	h.P50ms, h.P99ms = ms(quantile(gaps, 0.5)), ms(quantile(gaps, 0.99))
	h.PerSecond = round2(float64(len(c.sections)) / c.elapsed.Seconds())
	h.Sections, h.Handovers = len(c.sections), len(gaps)
	if w != nil {
		if h.Requests, err = w.end(); err != nil {
			return h, err
		}
		h.Counted, h.Uncontended = true, alone
		h.ReqPerHandover = round2(float64(h.Requests.Requests) / float64(h.Handovers))
		h.ReqPerSection = round2(float64(alone.Requests) / float64(h.Sections))
		if h.WaiterHandovers > 0 {
			h.ReqPerWaiterPerHandover = round2(float64(h.Requests.Requests-alone.Requests) / float64(h.WaiterHandovers))
			h.ReqPerWaitingRun = round2(float64(h.Requests.Requests-alone.Requests) / float64(h.WaitingRuns))
		}
		if alone.Mismatch != "" && h.Requests.Mismatch == "" {
			h.Requests.Mismatch = "uncontended: " + alone.Mismatch
		}
	}
	return h, nil
}

// waiters is, summed over the handovers, the runs waiting across each
// (launched before the previous child ended, their own child starting
// after the next one's), and how many runs waited across at least one.
func (c contention) waiters() (waiterHandovers, waitingRuns int) {
	waited := map[[2]int]bool{}
	for k := 0; k+1 < len(c.sections); k++ {
		for _, s := range c.sections[k+2:] {
			if c.launched[s.contender][s.run] < c.sections[k].end {
				waiterHandovers++
				waited[[2]int{s.contender, s.run}] = true
			}
		}
	}
	return waiterHandovers, len(waited)
}

// contend runs n contenders, each running prefix + a stamping child
// `sections` times in a row, and checks that no two children overlapped.
func contend(tmp, name string, prefix []string, n, sections int) (contention, error) {
	dir, err := os.MkdirTemp(tmp, "handover-")
	if err != nil {
		return contention{}, err
	}
	stamps := filepath.Join(dir, "stamps")
	c := contention{launched: make([][]int64, n)}
	for i := range c.launched {
		c.launched[i] = make([]int64, sections)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range sections {
				child := fmt.Sprintf(`s=$(date +%%s%%N); e=$(date +%%s%%N); echo "%d %d $s $e" >> %s`, i, j, stamps)
				cmd := exec.Command(prefix[0], append(slices.Clone(prefix[1:]), "sh", "-c", child)...)
				c.launched[i][j] = time.Now().UnixNano()
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("%v: %s", err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	c.elapsed = time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return c, err
	}
	b, err := os.ReadFile(stamps)
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		var v [4]int64
		for i := range v {
			if len(f) != len(v) {
				break
			}
			if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
				break
			}
		}
		if len(f) != len(v) || err != nil || v[0] < 0 || v[0] >= int64(n) || v[1] < 0 || v[1] >= int64(sections) {
			return c, fmt.Errorf("bad stamp %q", line)
		}
		c.sections = append(c.sections, section{int(v[0]), int(v[1]), v[2], v[3]})
	}
	if len(c.sections) != n*sections {
		return c, fmt.Errorf("%d sections, want %d", len(c.sections), n*sections)
	}
	slices.SortFunc(c.sections, func(a, b section) int { return int(a.start - b.start) })
	for k := 0; k+1 < len(c.sections); k++ {
		if c.sections[k].end > c.sections[k+1].start {
			return c, fmt.Errorf("%s: two children overlapped", name)
		}
	}
	return c, nil
}
