package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// row is one line of the results: one engine, fault and mode.
type row struct {
	Engine            string         `json:"engine"`
	Fault             string         `json:"fault"`
	Mode              string         `json:"mode"`
	Seconds           float64        `json:"seconds"`
	Sections          int            `json:"sections"`
	Overlaps          int            `json:"overlaps"`
	TokenRegressions  int            `json:"token_regressions"`
	StaleWrites       int            `json:"stale_writes_accepted"`
	Stuck             int            `json:"stuck"`
	NoProgress        int            `json:"no_progress"`
	RejectedWrites    int            `json:"rejected_writes"`
	FaultsInjected    int            `json:"faults_injected"`
	FaultErrors       []string       `json:"fault_errors,omitempty"`
	FreeAfter         float64        `json:"free_after_seconds"`
	PorcupineRegister string         `json:"porcupine_register,omitempty"`
	PorcupineLock     string         `json:"porcupine_sections,omitempty"`
	Exits             map[string]int `json:"distlock_exits,omitempty"`
	Expected          string         `json:"expected"`
	Unexpected        []string       `json:"unexpected,omitempty"`
	Skipped           string         `json:"skipped,omitempty"`
	Error             string         `json:"error,omitempty"`
	Seed              uint64         `json:"seed"`
	Kept              string         `json:"kept_dir,omitempty"`
}

func (r row) name() string { return r.Engine + "_" + r.Fault + "_" + r.Mode }

// rowSeed derives a row's seed from --seed and the row's name, so that a
// row replays the same schedule whatever else runs.
func rowSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, name)
	return seed ^ h.Sum64()
}

type env struct {
	cfg       config
	bin, self string
	log       func(format string, args ...any)
}

func (ev env) runRow(engine, fault, mode string) (r row) {
	r = row{Engine: engine, Fault: fault, Mode: mode, Expected: expect(engine, fault, mode).String()}
	r.Seed = rowSeed(ev.cfg.seed, r.name())
	if r.Skipped = skipReason(engine, fault, mode); r.Skipped != "" {
		r.Expected = "skipped"
		return r
	}
	began := time.Now()
	defer func() { r.Seconds = time.Since(began).Round(100 * time.Millisecond).Seconds() }()
	dir, err := os.MkdirTemp("", "torture-"+r.name()+"-")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer func() {
		if ev.cfg.keep && (r.Error != "" || len(r.Unexpected) > 0) {
			r.Kept = dir
			return
		}
		os.RemoveAll(dir)
	}()
	e, err := startEngine(engine, dir, ev.cfg.contenders, ev.cfg.ttl)
	if err != nil {
		r.Error = "start: " + err.Error()
		return r
	}
	defer e.close()
	if fault == "clock-jump" {
		if err := e.fakeClock(dir); err != nil {
			r.Error = "faketime: " + err.Error()
			return r
		}
	}
	ev.drive(&r, e, mode)
	return r
}

// drive runs the workload and the faults on a started engine, then checks.
func (ev env) drive(r *row, e engine, mode string) {
	cfg := ev.cfg
	reg, err := newRegister(r.Seed)
	if err != nil {
		r.Error = err.Error()
		return
	}
	limit := map[bool]int{true: 2, false: 1}[mode == "semaphore"]
	wl := &workload{bin: ev.bin, self: ev.self, key: "torture", regAddr: reg.addr(), ttl: cfg.ttl, limit: limit, url: e.url, handle: mode == "handle"}
	// A section held through the fault: 3 TTLs, so that a holder that
	// should lose its lease is inside when it does. A handle's lock is not
	// renewed: its section is kept within the lease (TTL/2, extended
	// half-way).
	stall := 3 * cfg.ttl
	if wl.handle {
		stall = cfg.ttl / 2
	}
	start := time.Now()
	wl.start(cfg.contenders)
	in := &injector{fault: r.Fault, e: e, reg: reg, wl: wl, ttl: cfg.ttl, stall: stall,
		rng: rand.New(rand.NewPCG(r.Seed, 1)), log: func(f string, a ...any) { ev.log(r.name()+": "+f, a...) }}
	healBy := start.Add(cfg.duration - max(3*cfg.ttl, 5*time.Second))
	in.run(healBy)
	time.Sleep(time.Until(start.Add(cfg.duration)))
	wl.finish(3*time.Second + 4*cfg.ttl + 10*time.Second)
	_ = e.cont() // in case a fault was cut short
	r.FreeAfter, r.Stuck = ev.stuck(e, cfg.ttl, limit)
	reg.close()
	ss, ws := reg.history()
	v := check(ss, ws, limit)
	r.Sections, r.Overlaps, r.TokenRegressions, r.StaleWrites, r.RejectedWrites = v.Sections, v.Overlaps, v.TokenRegressions, v.StaleWrites, v.RejectedWrites
	r.FaultsInjected, r.FaultErrors, r.Exits = in.injected, in.errs, wl.exitCounts()
	r.NoProgress = noProgress(ss, in, start.Add(cfg.duration), progressWindow(r.Engine, cfg.ttl))
	r.Unexpected = unexpected(*r, expect(r.Engine, r.Fault, r.Mode))
	ev.porcupine(r, ss, ws, limit)
}

// noProgress is 1 when no section started after the last fault healed
// and the section held through it was over (a holder that keeps its lock
// through a restart rightly holds on for its whole stall), given at least
// window (progressWindow) of workload after that; else 0.
func noProgress(ss []section, in *injector, stopped time.Time, window time.Duration) int {
	if in.injected == 0 {
		return 0
	}
	healed := in.lastHeal.UnixNano()
	for _, s := range ss {
		if s.ID == in.lastHeld {
			healed = max(healed, s.End)
		}
	}
	if stopped.UnixNano()-healed < int64(window) {
		return 0
	}
	for _, s := range ss {
		if s.Start > healed {
			return 0
		}
	}
	return 1
}

// consulFailover bounds, after a fault of all three Consul servers heals,
// the new leader's election and the renewals the paused servers had
// queued: each restarts a session's TTL (below). Seen: up to 2.9 s.
const consulFailover = 5 * time.Second

// progressWindow is how long after the last heal a holder that died in the
// fault may keep the lock: 2×TTL (a session or lease runs out between TTL
// and 2×TTL after its last renewal). On three Consul servers, a fault of
// them costs the leader (paused past the leader lease, it steps down), and
// Consul restarts every session's TTL timer when a new leader takes over
// (the timers live on the leader only: hashicorp/consul#524, a TTL "is
// extended on creation, heartbeat or failover"), as it does for a renewal
// a paused server forwards once there is a leader again: a holder that died
// during the pause keeps its slot until 2×TTL after those.
func progressWindow(engine string, ttl time.Duration) time.Duration {
	if engine == "consul3" {
		return 2*ttl + consulFailover
	}
	return 2 * ttl
}

// stuck: once the faults have healed and every contender is gone, a
// fresh try-once must get the lock within the TTL plus a margin (etcd
// rounds leases up to whole seconds and more; a restarted ZooKeeper or
// database takes seconds to serve). It returns how long that took.
func (ev env) stuck(e engine, ttl time.Duration, limit int) (float64, int) {
	const margin = 15 * time.Second
	began := time.Now()
	for time.Since(began) < ttl+margin {
		args := []string{"--backend", e.url(-1), "--connect-timeout", "2s", "run", "--key", "torture", "--ttl", ttl.String(), "--quiet"}
		if limit > 1 {
			args = append(args, "--limit", fmt.Sprint(limit))
		}
		if exec.Command(ev.bin, append(args, "--", "true")...).Run() == nil {
			return time.Since(began).Round(10 * time.Millisecond).Seconds(), 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(began).Round(10 * time.Millisecond).Seconds(), 1
}

// unexpected lists the properties a row violated that its expectation
// does not allow.
func unexpected(r row, x expectation) []string {
	var out []string
	for _, p := range []struct {
		name string
		n    int
	}{{propOverlap, r.Overlaps}, {propToken, r.TokenRegressions}, {propStale, r.StaleWrites}, {propStuck, r.Stuck}, {propNoProgress, r.NoProgress}} {
		if p.n > 0 && !x.allows(p.name) {
			out = append(out, p.name)
		}
	}
	return out
}

// porcupine checks the register's and the sections' histories and, for a
// row with any violation, writes both visualizations under --out.
func (ev env) porcupine(r *row, ss []section, ws []write, limit int) {
	violating := r.Overlaps+r.TokenRegressions+r.StaleWrites > 0
	dir := ""
	if ev.cfg.out != "" {
		dir = filepath.Join(ev.cfg.out, r.name())
		if err := os.MkdirAll(dir, 0o755); err == nil {
			writeJSON(filepath.Join(dir, "history.json"), map[string]any{"sections": ss, "writes": ws})
		}
	}
	var err error
	if r.PorcupineRegister, err = linearizable(registerModel, registerOps(ws, ss), dir, "register", violating); err != nil {
		r.Error = "porcupine: " + err.Error()
	}
	if r.PorcupineLock, err = linearizable(lockModel(limit), lockOps(ss), dir, "sections", violating); err != nil {
		r.Error = "porcupine: " + err.Error()
	}
	if r.PorcupineRegister == "illegal" {
		r.Unexpected = append(r.Unexpected, "register not linearizable (a bug in the tool)")
	}
	if r.PorcupineLock == "illegal" && r.Overlaps == 0 {
		r.Unexpected = append(r.Unexpected, "sections not linearizable without an overlap (a bug in the checker)")
	}
}
