// Command torture runs the release-built distlock against real servers
// it starts itself, under named faults, and checks the history the
// critical sections leave behind.
//
//	go run ./tools/torture --engine redis,etcd --fault none,kill-holder --duration 15s
//	go run ./tools/torture --engine all --fault all --duration 30s --out /tmp/torture
//
// Each row (engine × fault × mode) starts fresh servers, runs C
// contenders that loop `distlock run --key K --ttl T --wait …` on one key
// with this very binary as the command under the lock (the hidden `probe`
// subcommand), injects the fault on a schedule drawn from --seed, then
// checks: overlapping sections, tokens that do not rise, stale writes the
// fenced register accepted, a lock still stuck once faults healed, no
// progress after the last heal, and the register's and the sections'
// histories for linearizability with porcupine (an HTML visualization is
// written for every violating history). It exits 1 when any row shows a
// violation its engine's documented guarantee does not allow.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probeMain(os.Args[2:]))
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	os.Exit(run(cfg))
}
