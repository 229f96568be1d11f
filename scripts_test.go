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

// TestScripts runs the scenarios in testdata/script: those in common/ on
// every engine, those in <kind>/ on the engines of that kind (file, redis,
// etcd), those in network/ on every engine reached over the network.
func TestScripts(t *testing.T) {
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			if err := e.available(); err != nil {
				if requireServers() {
					t.Fatalf("%v, and DISTLOCK_TEST_REQUIRE_SERVERS=1", err)
				}
				t.Skipf("%v: the real engine's scenarios are skipped (CI requires it)", err)
			}
			dirs := []string{"common", e.kind}
			if e.kind != "file" && !e.direct {
				dirs = append(dirs, "network")
			}
			for _, dir := range dirs {
				path := filepath.Join("testdata", "script", dir)
				if m, _ := filepath.Glob(filepath.Join(path, "*.txtar")); len(m) == 0 {
					continue
				}
				t.Run(dir, func(t *testing.T) {
					t.Parallel()
					testscript.Run(t, params(e, path))
				})
			}
		})
	}
}

func params(e *engine, dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			st := &engineState{engine: e, harness: &harness{marks: map[string]time.Time{}, thaw: map[int]func(){}}}
			env.Defer(st.harness.close)
			if err := e.start(env, st); err != nil {
				return err
			}
			env.Values[stateKey{}] = st
			env.Setenv("DISTLOCK_BACKEND", st.url)
			env.Setenv("ENGINE", e.name)
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
			if cond == "fair" {
				return e.fair, nil
			}
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if cond == "freezer" {
				return haveFreezer(), nil
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
