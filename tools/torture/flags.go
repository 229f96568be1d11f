package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// config is what the flags ask for.
type config struct {
	engines    []string
	faults     []string
	modes      []string
	duration   time.Duration
	ttl        time.Duration
	contenders int
	seed       uint64
	out        string
	verbose    bool
	keep       bool
	// --cron: the run ledger's check (cron.go) instead of the rows.
	cron      bool
	cronSlots int
	oncePer   time.Duration
	replicas  int
	cronSkew  time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	engines := fs.String("engine", "all", "engines, a comma list or all: "+strings.Join(engineNames, ","))
	faults := fs.String("fault", "all", "faults, a comma list or all: "+strings.Join(faultNames, ","))
	modes := fs.String("mode", "mutex", "modes, a comma list or all: "+strings.Join(modeNames, ","))
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "workload time per row")
	fs.DurationVar(&c.ttl, "ttl", 2*time.Second, "lease TTL the contenders ask for")
	fs.IntVar(&c.contenders, "contenders", 6, "contenders per row")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the fault schedule (each row derives its own from it)")
	fs.StringVar(&c.out, "out", "", "directory for results.json, per-row histories and porcupine visualizations")
	fs.BoolVar(&c.verbose, "v", false, "log every fault as it is injected")
	fs.BoolVar(&c.keep, "keep", false, "keep the server directories (data, logs) of rows that fail or show an unexpected violation")
	fs.BoolVar(&c.cron, "cron", false, "check --once-per instead: replicas firing one cron entry on every engine at once (cron.go)")
	fs.IntVar(&c.cronSlots, "slots", 100, "--cron: slots to fire in")
	fs.DurationVar(&c.oncePer, "once-per", 2*time.Second, "--cron: the slot length")
	fs.IntVar(&c.replicas, "replicas", 3, "--cron: replicas firing in every slot")
	fs.DurationVar(&c.cronSkew, "skew", 500*time.Millisecond, "--cron: each replica fires at the middle of the slot, plus or minus up to this")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.cron && (c.cronSkew >= c.oncePer/2 || c.oncePer < time.Second || c.cronSlots < 1 || c.replicas < 2) {
		return c, fmt.Errorf("--cron needs --once-per ≥ 1s, --skew < once-per/2, --slots ≥ 1, --replicas ≥ 2")
	}
	var err error
	if c.engines, err = list(*engines, engineNames); err != nil {
		return c, fmt.Errorf("--engine: %w", err)
	}
	if c.faults, err = list(*faults, faultNames); err != nil {
		return c, fmt.Errorf("--fault: %w", err)
	}
	if c.modes, err = list(*modes, modeNames); err != nil {
		return c, fmt.Errorf("--mode: %w", err)
	}
	if c.contenders < 2 {
		return c, fmt.Errorf("--contenders must be at least 2")
	}
	if c.ttl < time.Second {
		return c, fmt.Errorf("--ttl must be at least 1s")
	}
	if c.duration < 4*c.ttl {
		return c, fmt.Errorf("--duration must be at least 4 TTLs (%v)", 4*c.ttl)
	}
	return c, nil
}

// list expands a comma list (or "all") against the known names.
func list(s string, known []string) ([]string, error) {
	if s == "all" {
		return known, nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown %q (known: %s)", n, strings.Join(known, ","))
		}
		out = append(out, n)
	}
	return out, nil
}
