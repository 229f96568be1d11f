// Command bench measures distlock against its peers on this machine, the
// way a user meets it: whole processes, real engines on loopback.
//
//	go run ./tools/bench                 # table on stdout, bench.json
//	go run ./tools/bench -rounds 80 -json /tmp/b.json
//	go run ./tools/bench -baseline /tmp/distlock-old   # before/after, interleaved
//
// With -baseline, every distlock measurement is made for that binary too
// ("before"), interleaved with this tree's ("after") round by round.
//
// It builds distlock, starts a real redis-server and etcd when they are on
// PATH (and skips what is missing, saying so), then measures:
//
//   - start-up: `distlock run -- true` per engine, interleaved round by
//     round with `distlock version`, `true`, `flock f true`, `etcdctl lock`
//     and a redis-cli SET NX PX + DEL script; medians and p90, the ratio to
//     each engine's peer, and our overhead over our own floor
//     (`distlock version` + `true`);
//   - handover: 8 contenders each taking the lock in a loop; each child
//     stamps `date +%s%N` when it starts and ends; a handover is the time
//     from one child's end to the next child's start (p50, p99) and the
//     contended throughput (sections per second), for distlock on each
//     engine, `flock` and `etcdctl lock`;
//   - a holder after 10 s: RSS, CPU time, and the engine requests it made
//     per renewal (Redis INFO commandstats, etcd's gRPC metrics).
//
// The engine round trips alone are Go benchmarks:
// go test -bench . ./internal/backend/
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/testenv/server"
)

func main() {
	rounds := flag.Int("rounds", 40, "start-up rounds (each command once per round, interleaved)")
	sections := flag.Int("sections", 5, "critical sections per contender in the handover test (8 contenders)")
	hold := flag.Duration("hold", 10*time.Second, "how long the idle holder is watched")
	jsonOut := flag.String("json", "bench.json", "where to write the results as JSON (empty: nowhere)")
	baseline := flag.String("baseline", "", "a distlock binary to measure too, as \"before\" (this tree's build is \"after\")")
	flag.Parse()
	if err := run(*rounds, *sections, *hold, *jsonOut, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Results is what bench.json holds.
type Results struct {
	Machine  string                  `json:"machine"`
	When     time.Time               `json:"when"`
	LoadAvg  []string                `json:"load_average"` // /proc/loadavg at the start and the end
	Rounds   int                     `json:"rounds"`
	Startup  map[string]Stat         `json:"startup_ms"`
	Ratios   map[string]float64      `json:"ratios"`
	Overhead map[string]float64      `json:"overhead_over_floor_ms"`
	Handover map[string]HandoverStat `json:"handover"`
	Holder   map[string]HolderStat   `json:"holder"`
	Notes    []string                `json:"notes"`
}

// Stat is a distribution's median and p90, in milliseconds.
type Stat struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	N      int     `json:"n"`
}

// HandoverStat is one tool's handover latency and throughput.
type HandoverStat struct {
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	PerSecond    float64 `json:"sections_per_second"`
	Sections     int     `json:"sections"`
	Requests     int64   `json:"engine_requests,omitempty"`
	ReqPerHandov float64 `json:"engine_requests_per_handover,omitempty"`
}

// HolderStat is an idle holder after the watch period.
type HolderStat struct {
	RSSkB          int64   `json:"rss_kb"`
	AnonkB         int64   `json:"rss_anon_kb"` // private: RSS less the binary's pages (shared by every distlock)
	CPUms          float64 `json:"cpu_ms"`
	Renewals       int     `json:"renewals_expected"`
	Requests       int64   `json:"engine_requests"`
	ReqPerRenewal  float64 `json:"engine_requests_per_renewal"`
	WatchedSeconds float64 `json:"watched_seconds"`
}

type engine struct {
	name     string
	url      string
	requests func() (int64, error) // engine requests served so far; nil: unknown
}

// binary is one distlock build under test.
type binary struct {
	label string // "" alone; "before" / "after" with -baseline
	path  string
}

// name is a measurement's name for this binary.
func (b binary) name(s string) string {
	if b.label == "" {
		return s
	}
	return s + " [" + b.label + "]"
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func run(rounds, sections int, hold time.Duration, jsonOut, baseline string) error {
	tmp, err := os.MkdirTemp("", "distlock-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	res := &Results{
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()), When: time.Now().UTC(), Rounds: rounds,
		Startup: map[string]Stat{}, Ratios: map[string]float64{}, Overhead: map[string]float64{},
		Handover: map[string]HandoverStat{}, Holder: map[string]HolderStat{},
	}
	note := func(format string, args ...any) {
		res.Notes = append(res.Notes, fmt.Sprintf(format, args...))
	}
	res.LoadAvg = append(res.LoadAvg, loadAvg())

	bin := filepath.Join(tmp, "distlock")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	bins := []binary{{"", bin}}
	if baseline != "" {
		if _, err := os.Stat(baseline); err != nil {
			return err
		}
		bins = []binary{{"before", baseline}, {"after", bin}}
	}

	engines := []engine{{name: "file", url: "file://" + filepath.Join(tmp, "locks")}}
	var redisAddr, etcdAddr string
	if p, err := server.StartRedis(filepath.Join(tmp, "redis")); err == nil {
		defer p.Close()
		redisAddr = p.Addr()
		engines = append(engines, engine{name: "redis", url: "redis://" + redisAddr, requests: redisRequests(redisAddr)})
	} else {
		note("redis: %v (skipped)", err)
	}
	if p, err := server.StartEtcd(filepath.Join(tmp, "etcd")); err == nil {
		defer p.Close()
		etcdAddr = p.Addr()
		engines = append(engines, engine{name: "etcd", url: "etcd://" + etcdAddr, requests: etcdRequests(etcdAddr)})
	} else {
		note("etcd: %v (skipped)", err)
	}
	if p, err := server.StartPostgres(filepath.Join(tmp, "postgres")); err == nil {
		defer p.Close()
		engines = append(engines, engine{name: "postgres", url: "postgres://" + server.PostgresUser + "@" + p.Addr() + "/postgres?sslmode=disable"})
	} else {
		note("postgres: %v (skipped)", err)
	}
	if p, err := server.StartMariaDB(filepath.Join(tmp, "mariadb")); err == nil {
		defer p.Close()
		engines = append(engines, engine{name: "mariadb", url: "mysql://" + server.MariaDBUser + "@" + p.Addr() + "/" + server.MariaDBDatabase})
	} else {
		note("mariadb: %v (skipped)", err)
	}

	// Start-up, interleaved round by round.
	var cmds []command
	for _, b := range bins {
		cmds = append(cmds, command{b.name("distlock version"), []string{b.path, "version"}})
	}
	cmds = append(cmds, command{"true", []string{"true"}})
	if p, err := exec.LookPath("flock"); err == nil {
		cmds = append(cmds, command{"flock f true", []string{p, filepath.Join(tmp, "flock-startup"), "true"}})
	} else {
		note("flock not on PATH: no file peer")
	}
	for _, e := range engines {
		for _, b := range bins {
			cmds = append(cmds, command{b.name("distlock run " + e.name), []string{b.path, "--backend", e.url, "run", "--key", "startup", "--", "true"}})
		}
	}
	if p, err := exec.LookPath("etcdctl"); err == nil && etcdAddr != "" {
		cmds = append(cmds, command{"etcdctl lock", []string{p, "--endpoints=" + etcdAddr, "lock", "startup", "true"}})
	} else if etcdAddr != "" {
		note("etcdctl not on PATH: no etcd peer")
	}
	if p, err := exec.LookPath("redis-cli"); err == nil && redisAddr != "" {
		host, port, _ := strings.Cut(redisAddr, ":")
		script := fmt.Sprintf("%[1]s -h %[2]s -p %[3]s SET startup x NX PX 30000 >/dev/null && %[1]s -h %[2]s -p %[3]s DEL startup >/dev/null", p, host, port)
		cmds = append(cmds, command{"redis-cli SET NX PX + DEL", []string{"sh", "-c", script}})
	} else if redisAddr != "" {
		note("redis-cli not on PATH: no redis peer")
	}
	times := map[string][]time.Duration{}
	for r := range rounds + 1 { // round 0 warms up
		for _, c := range cmds {
			t0 := time.Now()
			out, err := exec.Command(c.argv[0], c.argv[1:]...).CombinedOutput()
			d := time.Since(t0)
			if err != nil {
				return fmt.Errorf("%s: %v: %s", c.name, err, out)
			}
			if r > 0 {
				times[c.name] = append(times[c.name], d)
			}
		}
	}
	for name, ds := range times {
		res.Startup[name] = stat(ds)
	}
	peers := map[string]string{"file": "flock f true", "redis": "redis-cli SET NX PX + DEL", "etcd": "etcdctl lock"}
	for _, b := range bins {
		floor := res.Startup[b.name("distlock version")].Median + res.Startup["true"].Median
		for _, e := range engines {
			ours := res.Startup[b.name("distlock run "+e.name)].Median
			res.Overhead[b.name(e.name)] = round2(ours - floor)
			if peer, ok := res.Startup[peers[e.name]]; ok {
				res.Ratios[b.name(e.name+" / "+peers[e.name])] = round2(ours / peer.Median)
			}
		}
	}

	// Handover and throughput, 8 contenders.
	const contenders = 8
	type tool struct {
		name   string
		prefix []string // the command that runs a child under the lock
		e      *engine
	}
	var tools []tool
	for i := range engines {
		e := &engines[i]
		for _, b := range bins {
			tools = append(tools, tool{b.name("distlock " + e.name), []string{b.path, "--backend", e.url, "run", "--key", "handover", "--wait", "120s", "--"}, e})
		}
	}
	if p, err := exec.LookPath("flock"); err == nil {
		tools = append(tools, tool{"flock", []string{p, filepath.Join(tmp, "flock-handover")}, nil})
	}
	if p, err := exec.LookPath("etcdctl"); err == nil && etcdAddr != "" {
		tools = append(tools, tool{"etcdctl lock", []string{p, "--endpoints=" + etcdAddr, "lock", "handover", "--"}, nil})
	}
	for _, t := range tools {
		h, err := handover(tmp, t.name, t.prefix, contenders, sections, t.e)
		if err != nil {
			return fmt.Errorf("handover %s: %w", t.name, err)
		}
		res.Handover[t.name] = h
	}

	// An idle holder.
	for _, e := range engines {
		for _, b := range bins {
			h, err := holder(b.path, b.name("idle"), e, hold)
			if err != nil {
				return fmt.Errorf("holder %s: %w", e.name, err)
			}
			res.Holder[b.name(e.name)] = h
		}
	}
	res.LoadAvg = append(res.LoadAvg, loadAvg())

	printTable(os.Stdout, res, cmds, engines, bins)
	if jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s\n", jsonOut)
	}
	return nil
}

// handover runs n contenders, each taking the lock `sections` times in a
// row, every child stamping its start and end.
func handover(tmp, name string, prefix []string, n, sections int, e *engine) (HandoverStat, error) {
	dir, err := os.MkdirTemp(tmp, "handover-")
	if err != nil {
		return HandoverStat{}, err
	}
	stamps := filepath.Join(dir, "stamps")
	child := fmt.Sprintf(`echo "s $(date +%%s%%N)" >> %[1]s; echo "e $(date +%%s%%N)" >> %[1]s`, stamps)
	var before int64
	if e != nil && e.requests != nil {
		before, _ = e.requests()
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range sections {
				argv := append(slices.Clone(prefix), "sh", "-c", child)
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					errs <- fmt.Errorf("%v: %s", err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return HandoverStat{}, err
	}
	b, err := os.ReadFile(stamps)
	if err != nil {
		return HandoverStat{}, err
	}
	var starts, ends []int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		kind, v, _ := strings.Cut(line, " ")
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return HandoverStat{}, fmt.Errorf("bad stamp %q", line)
		}
		if kind == "s" {
			starts = append(starts, ns)
		} else {
			ends = append(ends, ns)
		}
	}
	slices.Sort(starts)
	slices.Sort(ends)
	if len(starts) != n*sections || len(ends) != len(starts) {
		return HandoverStat{}, fmt.Errorf("%d starts and %d ends, want %d each", len(starts), len(ends), n*sections)
	}
	var gaps []time.Duration
	for i := 0; i+1 < len(starts); i++ {
		if ends[i] > starts[i+1] {
			return HandoverStat{}, fmt.Errorf("%s: two children overlapped", name)
		}
		gaps = append(gaps, time.Duration(starts[i+1]-ends[i]))
	}
	slices.Sort(gaps)
	h := HandoverStat{
		P50ms:     ms(quantile(gaps, 0.5)),
		P99ms:     ms(quantile(gaps, 0.99)),
		PerSecond: round2(float64(len(starts)) / elapsed.Seconds()),
		Sections:  len(starts),
	}
	if e != nil && e.requests != nil {
		if after, err := e.requests(); err == nil {
			h.Requests = after - before
			h.ReqPerHandov = round2(float64(h.Requests) / float64(len(gaps)))
		}
	}
	return h, nil
}

// holder starts a run that sleeps, watches it for d, and reads its RSS,
// CPU time and the engine requests it made meanwhile.
func holder(bin, key string, e engine, d time.Duration) (HolderStat, error) {
	const ttl = 3 * time.Second
	c := exec.Command(bin, "--backend", e.url, "run", "--key", strings.NewReplacer(" [", "-", "]", "").Replace(key), "--ttl", ttl.String(), "--", "sleep", strconv.Itoa(int((d+5*time.Second)/time.Second)))
	if err := c.Start(); err != nil {
		return HolderStat{}, err
	}
	defer func() {
		// SIGTERM: the run ends its command and releases the lock.
		c.Process.Signal(syscall.SIGTERM)
		t := time.AfterFunc(10*time.Second, func() { c.Process.Kill() })
		c.Wait()
		t.Stop()
	}()
	time.Sleep(500 * time.Millisecond) // past acquisition: count renewals only
	var before int64
	if e.requests != nil {
		before, _ = e.requests()
	}
	t0 := time.Now()
	time.Sleep(d)
	h := HolderStat{WatchedSeconds: round2(time.Since(t0).Seconds()), Renewals: int(d / (ttl / 3))}
	if e.requests != nil {
		if after, err := e.requests(); err == nil {
			h.Requests = after - before
			h.ReqPerRenewal = round2(float64(h.Requests) / float64(h.Renewals))
		}
	}
	pid := c.Process.Pid
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
	return h, nil
}

// redisRequests counts the commands Redis served (INFO commandstats),
// less the INFO calls themselves.
func redisRequests(addr string) func() (int64, error) {
	return func() (int64, error) {
		out, err := exec.Command("redis-cli", "-h", strings.Split(addr, ":")[0], "-p", strings.Split(addr, ":")[1], "INFO", "commandstats").Output()
		if err != nil {
			return 0, err
		}
		var n int64
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info:") {
				continue
			}
			_, rest, _ := strings.Cut(line, "calls=")
			v, _, _ := strings.Cut(rest, ",")
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
		return n, nil
	}
}

// etcdRequests counts the gRPC calls etcd handled (its /metrics).
func etcdRequests(addr string) func() (int64, error) {
	return func() (int64, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, err
		}
		var n float64
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "grpc_server_handled_total{") || strings.HasPrefix(line, "grpc_server_msg_received_total{") && strings.Contains(line, `grpc_type="bidi_stream"`) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				n += v
			}
		}
		return int64(n), nil
	}
}

func stat(ds []time.Duration) Stat {
	s := slices.Clone(ds)
	slices.Sort(s)
	return Stat{Median: ms(quantile(s, 0.5)), P90: ms(quantile(s, 0.9)), N: len(s)}
}

// quantile of sorted s (nearest rank).
func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return round2(float64(d) / float64(time.Millisecond)) }
func round2(f float64) float64   { return float64(int64(f*100+0.5)) / 100 }

// command is one start-up measurement.
type command struct {
	name string
	argv []string
}

func printTable(w io.Writer, r *Results, cmds []command, engines []engine, bins []binary) {
	fmt.Fprintf(w, "distlock benchmark — %s, %d rounds; load average %s\n\n", r.Machine, r.Rounds, strings.Join(r.LoadAvg, " → "))
	fmt.Fprintf(w, "%-40s %10s %10s\n", "start-up (whole process)", "median ms", "p90 ms")
	for _, c := range cmds {
		s := r.Startup[c.name]
		fmt.Fprintf(w, "%-40s %10.2f %10.2f\n", c.name, s.Median, s.P90)
	}
	fmt.Fprintln(w)
	for _, e := range engines {
		for _, b := range bins {
			fmt.Fprintf(w, "distlock run %-18s over its floor (version + true): %+.2f ms\n", b.name(e.name), r.Overhead[b.name(e.name)])
		}
	}
	keys := make([]string, 0, len(r.Ratios))
	for k := range r.Ratios {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "ratio %-48s %.2f\n", k, r.Ratios[k])
	}
	fmt.Fprintf(w, "\n%-30s %9s %9s %12s %14s\n", "handover (8 waiters)", "p50 ms", "p99 ms", "sections/s", "req/handover")
	hk := make([]string, 0, len(r.Handover))
	for k := range r.Handover {
		hk = append(hk, k)
	}
	sort.Strings(hk)
	for _, k := range hk {
		h := r.Handover[k]
		req := "-"
		if h.Requests > 0 {
			req = fmt.Sprintf("%.1f", h.ReqPerHandov)
		}
		fmt.Fprintf(w, "%-30s %9.2f %9.2f %12.1f %14s\n", k, h.P50ms, h.P99ms, h.PerSecond, req)
	}
	fmt.Fprintf(w, "\n%-30s %9s %9s %9s %16s\n", "idle holder", "RSS kB", "anon kB", "CPU ms", "req/renewal")
	for _, e := range engines {
		for _, b := range bins {
			h := r.Holder[b.name(e.name)]
			req := "-"
			if h.Renewals > 0 && e.requests != nil {
				req = fmt.Sprintf("%.2f", h.ReqPerRenewal)
			}
			fmt.Fprintf(w, "%-30s %9d %9d %9.0f %16s\n", b.name(e.name), h.RSSkB, h.AnonkB, h.CPUms, req)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}
