package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

var lookPath = exec.LookPath

// repoDir is the checkout: go test runs a package's tests in its
// directory, and this package is the module's root.
var repoDir, _ = os.Getwd()

// TestScripts runs the scenarios in testdata/script: those in common/ on
// every engine, those in <kind>/ on the engines of that kind (file, redis,
// etcd), those in network/ on every engine reached over the network. That
// whole matrix runs with DISTLOCK_TEST_FULL=1 (.ci/run); the plain
// `go test ./...` runs the part of it that scope picks.
func TestScripts(t *testing.T) {
	all := engines()
	for _, e := range all {
		t.Run(e.name, func(t *testing.T) {
			if err := e.available(); err != nil {
				if requireServers() {
					t.Fatalf("%v, and DISTLOCK_TEST_REQUIRE_SERVERS=1", err)
				}
				t.Skipf("%v: the real engine's scenarios are skipped (CI requires it)", err)
			}
			for _, s := range scope(e, all, fullMatrix()) {
				t.Run(s.dir, func(t *testing.T) {
					t.Parallel()
					testscript.Run(t, params(e, s))
				})
			}
		})
	}
}

// fullMatrix: DISTLOCK_TEST_FULL=1 runs every scenario on every engine,
// and the contention runs (contention_test.go). .ci/run sets it.
func fullMatrix() bool { return os.Getenv("DISTLOCK_TEST_FULL") == "1" }

// suite is one directory of scenarios run on one engine: all of them, or
// only the files named.
type suite struct {
	dir   string // testdata/script/<dir>; also the subtest's name
	files []string
}

// smokeScenarios are the common scenarios that every engine runs in the
// default run even when it is not deep: each exercises a different part
// of an engine (grant and release, busy, waiting and the wake-up on
// release, fencing tokens, holds and handles, inspect, list, break while
// held, a semaphore), so a broken engine is noticed by a plain
// `go test ./...`.
var smokeScenarios = []string{
	"run_and_release",
	"busy_exits_75_naming_holder",
	"wait_until_holder_finishes",
	"tokens_rise",
	"acquire_release_across_steps",
	"status_json_fields",
	"list_table_sorted",
	"break_wakes_waiter_and_stops_holder",
	"limit_three_of_six",
}

// scope is what TestScripts runs on e. With full: common/, e's own
// directory and, for an engine behind the fault proxy, network/. Without
// it (the plain `go test ./...`, which must pass in a few minutes on two
// cores with every server installed):
//
//   - a deep engine runs all of that: the file engine, redis-server (the
//     real engine reached over the network, so network/ runs there), and
//     an in-process stand-in (miniredis, embedded etcd) whose real engine
//     is not installed, so that a machine with only Go runs every scenario
//     on three engines as before;
//   - every other engine runs its own directory and smokeScenarios.
func scope(e *engine, all []*engine, full bool) []suite {
	networked := e.kind != "file" && !e.direct
	if full || e.deep || (e.standIn != "" && !installed(all, e.standIn)) {
		var out []suite
		for _, dir := range []string{"common", e.kind} {
			out = append(out, suite{dir: dir})
		}
		if networked {
			out = append(out, suite{dir: "network"})
		}
		return withScenarios(out)
	}
	files := make([]string, len(smokeScenarios))
	for i, name := range smokeScenarios {
		files[i] = filepath.Join("testdata", "script", "common", name+".txtar")
	}
	return withScenarios([]suite{{dir: "common", files: files}, {dir: e.kind}})
}

// withScenarios drops the directories that hold no scenario (not every
// kind of engine has scenarios of its own).
func withScenarios(ss []suite) []suite {
	var out []suite
	for _, s := range ss {
		if s.files != nil {
			out = append(out, s)
			continue
		}
		if m, _ := filepath.Glob(filepath.Join("testdata", "script", s.dir, "*.txtar")); len(m) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// installed reports whether the engine named name can run here.
func installed(all []*engine, name string) bool {
	for _, e := range all {
		if e.name == name {
			return e.available() == nil
		}
	}
	return false
}

// TestSmokeScenariosExist: a renamed or removed scenario must not drop out
// of the default run silently.
func TestSmokeScenariosExist(t *testing.T) {
	for _, name := range smokeScenarios {
		if _, err := os.Stat(filepath.Join("testdata", "script", "common", name+".txtar")); err != nil {
			t.Errorf("smokeScenarios names %s: %v", name, err)
		}
	}
}

func params(e *engine, s suite) testscript.Params {
	dir := filepath.Join("testdata", "script", s.dir)
	if s.files != nil {
		dir = ""
	}
	return testscript.Params{
		Dir:                 dir,
		Files:               s.files,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			st := &engineState{engine: e, harness: &harness{marks: map[string]time.Time{}, thaw: map[int]func(){}}}
			env.Defer(st.harness.close)
			isolateTmp(env)
			if err := e.start(env, st); err != nil {
				return err
			}
			if !strings.HasPrefix(st.url, e.scheme+"://") {
				return fmt.Errorf("engine %s's URL %s is not %s:// (its scheme in engines_test.go)", e.name, st.url, e.scheme)
			}
			env.Values[stateKey{}] = st
			env.Setenv("DISTLOCK_BACKEND", st.url)
			env.Setenv("ENGINE", e.name)
			// "no" where the engine cannot say when a lease expires (the
			// [expiry] condition), for scenarios that test it in jq.
			env.Setenv("EXPIRY", map[bool]string{true: "no", false: "yes"}[e.noExpiry])
			// The checkout, for scenarios that run what the README and
			// examples/ tell users to paste (read only).
			env.Setenv("REPO", repoDir)
			// Under -race every process sleeps 1s at exit by default; the
			// scenarios exec distlock hundreds of times.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			// Keys testscript's quoting cannot spell.
			env.Setenv("LONGKEY", strings.Repeat("k", 513))
			env.Setenv("CTRLKEY", "a\x01b")
			// Harness commands that start processes give them the
			// script's environment (scriptEnv).
			env.Values[envVarsKey{}] = slices.Clone(env.Vars)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if name, ok := strings.CutPrefix(cond, "engine:"); ok {
				return name == e.name || name == e.kind || name == e.family, nil
			}
			if cond == "real" {
				return e.real, nil
			}
			if cond == "expiry" {
				return !e.noExpiry, nil
			}
			if cond == "fair" {
				return e.caps().Fair, nil
			}
			if cond == "semaphore" {
				return e.caps().Semaphore, nil
			}
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if cond == "freezer" {
				return haveFreezer(), nil
			}
			if cond == "pidns" {
				return havePidNamespace(), nil
			}
			if cond == "isolated" {
				// Scenarios that change the whole machine (the kernel's next
				// pid, frozen processes) would hit other tests' processes, and
				// one that the parallel run's load is known to upset
				// (zookeeper/restart_keeps_session): they run only in a run
				// of their own (.ci/run does that, required).
				return os.Getenv("DISTLOCK_TEST_ISOLATED") == "1", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: allCommands(),
	}
}
