package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distlock/distlock/internal/testenv/release"
)

// run builds distlock as the release does, runs every row, prints the
// table, writes results.json and returns the exit status: 1 when a row
// shows an unexpected violation or failed to run.
func run(cfg config) int {
	tmp, err := os.MkdirTemp("", "torture-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "distlock")
	how, err := release.Build(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "torture: distlock built with %s; seed %d\n", how, cfg.seed)
	ev := env{cfg: cfg, bin: bin, self: self, log: func(f string, a ...any) {
		if cfg.verbose {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+f+"\n", a...)
		}
	}}
	if cfg.out != "" {
		if err := os.MkdirAll(cfg.out, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "torture:", err)
			return 2
		}
	}
	if cfg.cron {
		return ev.runCron()
	}
	var rows []row
	status := 0
	for _, mode := range cfg.modes {
		for _, engine := range cfg.engines {
			for _, fault := range cfg.faults {
				r := ev.runRow(engine, fault, mode)
				fmt.Fprintf(os.Stderr, "torture: %-22s %-16s %-9s %s (%d sections, %.0fs)\n", engine, fault, mode, verdictOf(r), r.Sections, r.Seconds)
				if r.Error != "" || len(r.Unexpected) > 0 {
					status = 1
				}
				rows = append(rows, r)
				if cfg.out != "" {
					writeJSON(filepath.Join(cfg.out, "results.json"), rows)
				}
			}
		}
	}
	table(os.Stdout, rows)
	return status
}
