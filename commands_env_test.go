package main

import (
	"maps"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// allCommands is every harness command: scriptCommands plus these.
func allCommands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	m := maps.Clone(scriptCommands)
	m["envfile"] = cmdEnvFile
	return m
}

// envfile FILE: set the KEY=VALUE lines of FILE in the script's
// environment, as `eval "$(distlock acquire ...)"` would.
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: envfile FILE")
	}
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			ts.Setenv(k, v)
		}
	}
}
