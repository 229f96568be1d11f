package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/testenv/release"
)

// The scale mode (-scale): issue 25's many holders and long queues, on
// every engine installed, the servers started with their own default
// connection limits.
//
//   - Many holders: n concurrent `distlock run -v --ttl 6s -- cat FIFO`
//     holders of distinct keys, launched at once; once each has acquired
//     (or failed) and ttl/2 more has passed, they are watched for -idle:
//     the renewals they log, the engine requests (as counted above), the
//     CPU time of distlock and its helper processes (schedstat, every
//     thread), the server's CPU, and at the end each holder's private
//     memory (Private_Clean + Private_Dirty of smaps_rollup, distlock,
//     its group watcher and pin together). Then the FIFO is closed, every
//     command exits 0, and so must every run.
//   - Long queues: n contenders on one key, -queue-sections short
//     critical sections each (by default enough for 100 sections, at
//     least 2 each), timed and counted as the handover table does, for
//     distlock on each engine, flock(1) and `etcdctl lock`; PostgreSQL's
//     and MariaDB's requests from their own statistics (count_sql.go).
//
// Sizes go in the outer loop and engines in the inner one, so that a
// change in the machine's load falls on every engine at a size alike.

// scaleConfig is the scale mode's flags.
type scaleConfig struct {
	holders, waiters []int
	idle             time.Duration
	sections         int
	engines          []string // empty: every engine present
	jsonOut          string
}

// ScaleResults is what scale.json holds.
type ScaleResults struct {
	Machine string                   `json:"machine"`
	When    time.Time                `json:"when"`
	Took    string                   `json:"took"`
	LoadAvg []string                 `json:"load_average"`
	Build   string                   `json:"build"`
	Limits  map[string]string        `json:"server_limits"`
	Counted map[string]string        `json:"engine_requests_counted"`
	Holders map[string][]HoldersStat `json:"many_holders"` // by engine, by size
	Queues  map[string][]QueueStat   `json:"long_queues"`  // by tool, by size
	Sizes   map[string][]int         `json:"sizes"`
	Notes   []string                 `json:"notes"`
	order   []string                 // engines, in table order
	tools   []string                 // queue tools, in table order
}

// sectionsFor is the sections per contender with n contenders: as
// given, or (0) enough for 100 sections in all, at least 2 each.
func sectionsFor(n, given int) int {
	if given > 0 {
		return given
	}
	return max(2, (100+n-1)/n)
}

// QueueStat is one long-queue measurement.
type QueueStat struct {
	Waiters  int    `json:"waiters"`
	Sections int    `json:"sections_per_contender"`
	Error    string `json:"error,omitempty"`
	HandoverStat
}

// parseSizes reads "1,50,200".
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q: want positive integers separated by commas", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func runScale(cfg scaleConfig) error {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "distlock-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	res := &ScaleResults{
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()), When: start.UTC(),
		Counted: map[string]string{}, Holders: map[string][]HoldersStat{}, Queues: map[string][]QueueStat{},
		Sizes: map[string][]int{"holders": cfg.holders, "waiters": cfg.waiters},
	}
	note := func(format string, args ...any) { res.Notes = append(res.Notes, fmt.Sprintf(format, args...)) }
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	bin := filepath.Join(tmp, "distlock")
	if res.Build, err = release.Build(bin); err != nil {
		return err
	}
	srv := startServers(tmp, true, note)
	defer srv.close()
	engines := selectEngines(srv.engines, cfg.engines, note)
	res.Limits = serverLimits(engines)
	for _, e := range engines {
		res.order = append(res.order, e.name)
		res.Counted[e.name] = "not counted"
		switch {
		case e.counter != nil:
			res.Counted[e.name] = e.counter.what()
		case e.queueCounter != nil:
			res.Counted[e.name] = e.queueCounter.what()
		}
	}
	if err := scaleHolders(res, tmp, bin, engines, cfg); err != nil {
		return err
	}
	scaleQueues(res, tmp, bin, engines, srv.etcdAddr, cfg)
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	res.Took = time.Since(start).Round(time.Second).String()
	printScale(os.Stdout, res)
	if cfg.jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s\n", cfg.jsonOut)
	}
	return nil
}

// selectEngines keeps the engines named (all when none is).
func selectEngines(all []engine, names []string, note func(string, ...any)) []engine {
	if len(names) == 0 {
		return all
	}
	var out []engine
	for _, e := range all {
		if slices.Contains(names, e.name) {
			out = append(out, e)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(out, func(e engine) bool { return e.name == n }) {
			note("%s: not measured (not installed, or no such engine)", n)
		}
	}
	return out
}

// scaleHolders measures every size on every engine, sizes outermost.
func scaleHolders(res *ScaleResults, tmp, bin string, engines []engine, cfg scaleConfig) error {
	for _, n := range cfg.holders {
		for _, e := range engines {
			progress("holders: %d on %s", n, e.name)
			ramp := 60*time.Second + time.Duration(n)*100*time.Millisecond
			st, err := measureHolders(tmp, bin, e, n, cfg.idle, ramp)
			if err != nil {
				return fmt.Errorf("%d holders on %s: %w", n, e.name, err)
			}
			res.Holders[e.name] = append(res.Holders[e.name], st)
			progress("  ok=%v acquired=%d exited0=%d private=%.2fMB renewals/ttl3=%.2f %s", st.AllOK, st.Acquired, st.ExitedOK, st.PrivateMB, st.RenewalsPerTTL3, st.FirstError)
		}
	}
	return nil
}

// queueTool is one contender command of the long queues.
type queueTool struct {
	name   string
	prefix func(key string) []string
	c      counter
}

// scaleQueues measures every size with every tool, sizes outermost. A
// failure is recorded, not fatal: an engine refusing 200 waiters is a
// result.
func scaleQueues(res *ScaleResults, tmp, bin string, engines []engine, etcdAddr string, cfg scaleConfig) {
	var tools []queueTool
	for _, e := range engines {
		c := e.counter
		if c == nil {
			c = e.queueCounter
		}
		tools = append(tools, queueTool{"distlock " + e.name, func(key string) []string {
			return []string{bin, "--backend", e.url, "run", "--key", key, "--wait", "300s", "--"}
		}, c})
	}
	if p, err := exec.LookPath("flock"); err == nil {
		tools = append(tools, queueTool{"flock", func(key string) []string { return []string{p, filepath.Join(tmp, "flock-"+key)} }, nil})
	}
	if p, err := exec.LookPath("etcdctl"); err == nil && etcdAddr != "" {
		tools = append(tools, queueTool{"etcdctl lock", func(key string) []string {
			return []string{p, "--endpoints=" + etcdAddr, "lock", key, "--"}
		}, etcdCounter{etcdAddr}})
	}
	for _, t := range tools {
		res.tools = append(res.tools, t.name)
	}
	for _, n := range cfg.waiters {
		for _, t := range tools {
			progress("queue: %d on %s", n, t.name)
			key := fmt.Sprintf("queue-%d", n)
			h, err := handover(tmp, t.name, t.prefix(key), n, sectionsFor(n, cfg.sections), t.c)
			q := QueueStat{Waiters: n, Sections: sectionsFor(n, cfg.sections), HandoverStat: h}
			if err != nil {
				q.Error = errorLine(err.Error())
			}
			res.Queues[t.name] = append(res.Queues[t.name], q)
			progress("  p50=%.1f p99=%.1f settled p99=%.1f req/waiter/handover=%.2f %s", h.P50ms, h.P99ms, h.SettledP99ms, h.ReqPerWaiterPerHandover, q.Error)
		}
	}
}

// errorLine is distlock's own error line in a failed contender's output,
// else the first line.
func errorLine(s string) string {
	if _, rest, ok := strings.Cut(s, "distlock: "); ok {
		return "distlock: " + firstLine(rest)
	}
	return firstLine(s)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
