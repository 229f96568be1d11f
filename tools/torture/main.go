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
// violation its engine's documented guarantee does not allow, or fails.
//
// # Rows
//
// Engines: file, redis, redis-sentinel (master, one replica, three
// sentinels), redis-sentinel-wait1 (the same with ?wait=1), redis-cluster
// (three masters), redlock (three masters), etcd (one member), zookeeper
// (one server), consul (a dev agent; its data is in memory, so
// restart-server empties it too), consul3 (three servers, kill-leader),
// postgres, mariadb. Faults: none, pause-server (SIGSTOP of
// every server process for 1.5–2 TTLs), partition-client (the holder's own
// fault proxy holds its traffic as long), restart-server (data kept; Redis
// with SHUTDOWN SAVE), wipe-server (data lost; Redlock: one master),
// kill-holder (SIGKILL the holder's distlock), stop-holder (SIGSTOP it for
// 2 TTLs, then SIGCONT), failover (Sentinel: SIGKILL the master, wait for
// the promotion, start it again empty), clock-jump (PostgreSQL, MariaDB:
// the server's wall clock jumps 3 TTLs forward under libfaketime). What
// cannot be run is a row with "skipped: <reason>", never a result.
//
// # Expected-unsafe rows
//
// A row may violate a property only where the engine's documented
// guarantee does not cover the fault (plan.go: expect): wipe-server on a
// single node may overlap, Sentinel without wait= failing over may do
// anything, a SIGSTOPped distlock's command may overlap (the fenced
// register must still refuse its writes), a server clock jumped past the
// drift allowance may overlap. Every other property of those rows, and
// every property of every other row, must come out 0.
//
// # Cron
//
// With --cron the tool checks the run ledger instead (cron.go): on every
// engine at once, --replicas replicas fire `distlock run --once-per` in
// each of --slots slots, each at the middle of the slot plus its own skew
// (±--skew); some slots' first command fails, some SIGKILLs its distlock.
// Every slot must have exactly one successful command.
//
// # Output
//
// A table on stdout; with --out DIR, DIR/results.json (one object per row)
// and DIR/<engine>_<fault>_<mode>/ with history.json (sections and
// writes) and, for a row with any violation, sections.html and
// register.html (porcupine's visualizations).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probeMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "cronprobe" {
		os.Exit(cronProbeMain(os.Args[2:]))
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	os.Exit(run(cfg))
}
