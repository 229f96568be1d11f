package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// cronProbeMain is the command the cron mode's replicas run under
// `distlock run --once-per` (the hidden `cronprobe` subcommand). The first
// command to run in a slot chosen to fail exits 3; in a slot chosen to be
// killed it SIGKILLs its own distlock (its parent) and waits to be stopped
// by the group watcher. Every other command succeeds. Each one appends one
// line, "<slot> <ok|fail|killed> <pid>", to the log the tool checks.
func cronProbeMain(args []string) int {
	fs := flag.NewFlagSet("cronprobe", flag.ContinueOnError)
	log := fs.String("log", "", "the log every command appends its line to")
	first := fs.String("first", "ok", "what the slot's first command does: ok, fail or kill")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	slot := os.Getenv("DISTLOCK_RUN_SLOT")
	if slot == "" {
		fmt.Fprintln(os.Stderr, "cronprobe: DISTLOCK_RUN_SLOT is not set")
		return 2
	}
	what := "ok"
	if *first != "ok" && firstIn(filepath.Dir(*log), slot) {
		what = map[string]string{"fail": "fail", "kill": "killed"}[*first]
	}
	if err := appendLine(*log, fmt.Sprintf("%s %s %d\n", slot, what, os.Getpid())); err != nil {
		fmt.Fprintln(os.Stderr, "cronprobe:", err)
		return 2
	}
	switch what {
	case "fail":
		return 3
	case "killed":
		syscall.Kill(os.Getppid(), syscall.SIGKILL)
		time.Sleep(time.Minute) // the group watcher stops us
		return 4
	}
	return 0
}

// firstIn says whether this is the first command of slot: the one that
// creates its marker.
func firstIn(dir, slot string) bool {
	name := "first-" + strings.NewReplacer("/", "_", ":", "_").Replace(slot)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// appendLine appends one short line; O_APPEND writes of a few bytes are
// not interleaved.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
