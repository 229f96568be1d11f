// Command bench measures distlock against its peers on this machine, the
// way a user meets it: whole processes, real engines on loopback.
//
//	go run ./tools/bench                 # table on stdout, bench.json
//	go run ./tools/bench -rounds 8       # a quick run
//	go run ./tools/bench -rounds 80 -json /tmp/b.json
//	go run ./tools/bench -baseline /tmp/distlock-old   # before/after, interleaved
//	go run ./tools/bench -scale          # many holders, long queues (scale.go)
//
// It builds distlock as the release does (.goreleaser.yaml: CGO_ENABLED=0,
// -trimpath, -ldflags '-s -w'; a cgo build links libc dynamically and
// starts about 1 ms slower), starts a real redis-server, etcd, ZooKeeper,
// PostgreSQL and MariaDB when they are installed (and skips what is
// missing, saying so), then measures:
//
//   - start-up: `distlock run -- true` per engine, interleaved round by
//     round with `distlock version`, `true`, `flock f true`, `etcdctl lock`
//     and a redis-cli SET NX PX + DEL script; medians and p90, the ratio to
//     each engine's peer, and our overhead over our own floor
//     (`distlock version` + `true`);
//   - handover: 8 contenders each taking the lock -sections times in a
//     row; each child stamps its contender, its run and `date +%s%N` at its
//     start and end; a handover is the time from one child's end to the
//     next child's start (p50, p99), and the contended throughput (sections
//     per second), for distlock on each engine, `flock` and `etcdctl lock`;
//   - the engine requests of a handover, per waiter (see below);
//   - an idle holder (--ttl 3s, -v) watched for -hold: RSS, CPU time, the
//     renewals it made (its "renewed" log lines, counted) per ttl/3, and
//     the engine requests per renewal.
//
// With -baseline, every distlock measurement is made for that binary too
// ("before", used as given), interleaved with this tree's ("after") round
// by round.
//
// # What an engine request is
//
// Redis: a command a client sent, counted with MONITOR. INFO commandstats
// is no good for this: it also counts the commands a Lua script runs (an
// EVALSHA that calls PEXPIRE counts twice). The bench opens a MONITOR
// connection and a probe connection for each measurement; the probe's
// INFO commandstats before and after are the window's bounds in the
// MONITOR stream (Redis runs commands one at a time and feeds MONITOR in
// that order, so the lines between the two INFOs are exactly the commands
// run between them). Lines tagged [0 lua] are a script's own commands and
// are not requests; every other line is one request, attributed to its
// client connection and broken down by command. As a check, the
// commandstats delta less the Lua lines must equal that count (a command
// MONITOR hides, such as an admin command, would show as a difference,
// and the bench says so in a note).
//
// etcd: gRPC messages the server received (grpc_server_msg_received_total
// from its /metrics): one per unary call, one per message on a stream. A
// KeepAliveOnce opens a LeaseKeepAlive stream and sends one message on it:
// it is one request, and the stream it opened is counted apart
// (grpc_server_started_total of the stream methods), as is a Watch.
//
// ZooKeeper: packets the server received (the "Received" of its srvr
// four-letter word, less the bench's own srvr): every request, the session
// pings and the connect requests included.
//
// The file engine, PostgreSQL and MariaDB requests are not counted.
//
// # Requests per waiter per handover
//
// The requests of a contended run include what every section costs
// anyway (connect, acquire, release), so the bench first runs the same
// number of sections with one contender (uncontended) and counts their
// requests. What the contended run makes beyond that is what waiting
// cost. A run waits across a handover when the bench had launched it
// before the previous child ended and its own child starts after the
// next one's (from the stamps and the launch times); the waiter-handovers
// are that count summed over every handover. Requests per waiter per
// handover = (contended − uncontended requests) / waiter-handovers. The
// raw figure (all contended requests / handovers) is printed too, as is
// the same excess per waiting run (a run that waited across at least one
// handover), the per-section breakdown by command of both runs (on Redis
// with each script named from internal/backend/redis/*.lua), and on
// Redis the commonest command sequences of a client connection: who
// made which requests.
//
// The engine round trips alone are Go benchmarks:
// go test -bench . ./internal/backend/
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/testenv/release"
	"github.com/distlock/distlock/internal/testenv/server"
)

func main() {
	rounds := flag.Int("rounds", 40, "start-up rounds (each command once per round, interleaved)")
	sections := flag.Int("sections", 5, "critical sections per contender in the handover test (8 contenders)")
	hold := flag.Duration("hold", 10*time.Second, "how long the idle holder is watched")
	jsonOut := flag.String("json", "bench.json", "where to write the results as JSON (empty: nowhere)")
	baseline := flag.String("baseline", "", "a distlock binary to measure too, as \"before\" (this tree's build is \"after\")")
	scale := flag.Bool("scale", false, "measure at scale instead: many holders and long queues on every engine, servers at their default limits (-holders, -waiters)")
	holders := flag.String("holders", "1,50,200,500", "with -scale: the numbers of concurrent holders of distinct keys")
	waiters := flag.String("waiters", "8,50,200", "with -scale: the numbers of contenders on one key")
	idle := flag.Duration("idle", 12*time.Second, "with -scale: how long the idle holders are watched")
	queueSections := flag.Int("queue-sections", 0, "with -scale: critical sections per contender in the long queues (0: enough for 100 sections, at least 2)")
	flag.StringVar(&holderLogs, "holder-logs", "", "with -scale: a directory to keep every holder's -v log in")
	only := flag.String("engines", "", "with -scale: the engines to measure, e.g. file,redis (default: every engine present)")
	flag.Parse()
	if *scale {
		if err := scaleMain(*holders, *waiters, *only, *idle, *queueSections, jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, *sections, *hold, *jsonOut, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// scaleMain reads the scale mode's flags and runs it; its JSON goes to
// scale.json unless -json was given.
func scaleMain(holders, waiters, only string, idle time.Duration, sections int, jsonOut *string) error {
	cfg := scaleConfig{idle: idle, sections: sections, jsonOut: "scale.json"}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "json" {
			cfg.jsonOut = *jsonOut
		}
	})
	var err error
	if cfg.holders, err = parseSizes(holders); err != nil {
		return fmt.Errorf("-holders: %w", err)
	}
	if cfg.waiters, err = parseSizes(waiters); err != nil {
		return fmt.Errorf("-waiters: %w", err)
	}
	if only != "" {
		cfg.engines = strings.Split(only, ",")
	}
	return runScale(cfg)
}

// Results is what bench.json holds.
type Results struct {
	Machine  string                  `json:"machine"`
	When     time.Time               `json:"when"`
	LoadAvg  []string                `json:"load_average"` // /proc/loadavg at the start and the end
	Build    string                  `json:"build"`        // how this tree's distlock was built
	Rounds   int                     `json:"rounds"`
	Counted  map[string]string       `json:"engine_requests_counted"` // per engine: what an engine request is
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

type engine struct {
	name    string
	url     string
	counter counter         // nil: requests not counted
	proc    *server.Process // its server; nil for the file engine
	// queueCounter counts the long queues' requests where counter does
	// not (the SQL engines, exact only once the clients are gone).
	queueCounter counter
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
		Counted: map[string]string{}, Startup: map[string]Stat{}, Ratios: map[string]float64{}, Overhead: map[string]float64{},
		Handover: map[string]HandoverStat{}, Holder: map[string]HolderStat{},
	}
	note := res.note
	res.LoadAvg = append(res.LoadAvg, loadAvg())

	bin := filepath.Join(tmp, "distlock")
	if res.Build, err = release.Build(bin); err != nil {
		return err
	}
	bins := []binary{{"", bin}}
	if baseline != "" {
		if _, err := os.Stat(baseline); err != nil {
			return err
		}
		bins = []binary{{"before", baseline}, {"after", bin}}
		note("before: %s, used as given (build flags unknown)", baseline)
	}

	srv := startServers(tmp, false, note)
	defer srv.close()
	engines, redisAddr, etcdAddr := srv.engines, srv.redisAddr, srv.etcdAddr
	for _, e := range engines {
		if e.counter != nil {
			res.Counted[e.name] = e.counter.what()
		} else {
			res.Counted[e.name] = "not counted"
		}
	}

	cmds, err := startup(res, tmp, rounds, bins, engines, redisAddr, etcdAddr, note)
	if err != nil {
		return err
	}

	if err := handovers(res, tmp, sections, bins, engines, etcdAddr); err != nil {
		return err
	}
	if err := holders(res, hold, bins, engines); err != nil {
		return err
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

// handovers measures handover and throughput with 8 contenders, for each
// engine and binary and for the peers found on PATH (flock, etcdctl lock).
func handovers(res *Results, tmp string, sections int, bins []binary, engines []engine, etcdAddr string) error {
	note := res.note
	const contenders = 8
	type tool struct {
		name   string
		prefix []string // the command that runs a child under the lock
		c      counter
	}
	var tools []tool
	for _, e := range engines {
		for _, b := range bins {
			tools = append(tools, tool{b.name("distlock " + e.name), []string{b.path, "--backend", e.url, "run", "--key", "handover", "--wait", "120s", "--"}, e.counter})
		}
	}
	if p, err := exec.LookPath("flock"); err == nil {
		tools = append(tools, tool{"flock", []string{p, filepath.Join(tmp, "flock-handover")}, nil})
	}
	if p, err := exec.LookPath("etcdctl"); err == nil && etcdAddr != "" {
		tools = append(tools, tool{"etcdctl lock", []string{p, "--endpoints=" + etcdAddr, "lock", "handover", "--"}, etcdCounter{etcdAddr}})
	}
	for _, t := range tools {
		h, err := handover(tmp, t.name, t.prefix, contenders, sections, t.c)
		if err != nil {
			return fmt.Errorf("handover %s: %w", t.name, err)
		}
		res.Handover[t.name] = h
		if h.Counted && h.Requests.Mismatch != "" {
			note("handover %s: %s", t.name, h.Requests.Mismatch)
		}
	}

	return nil
}

// holders watches an idle holder on each engine and binary.
func holders(res *Results, hold time.Duration, bins []binary, engines []engine) error {
	note := res.note
	for _, e := range engines {
		for _, b := range bins {
			h, err := holder(b.path, b.name("idle"), e, hold)
			if err != nil {
				return fmt.Errorf("holder %s: %w", e.name, err)
			}
			res.Holder[b.name(e.name)] = h
			if h.Requests != nil && h.Requests.Mismatch != "" {
				note("holder %s: %s", b.name(e.name), h.Requests.Mismatch)
			}
		}
	}
	return nil
}

// note adds a line to what the run noticed (Results.Notes).
func (r *Results) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}
