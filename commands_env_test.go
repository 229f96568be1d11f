package main

import (
	"os"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// waitgrep [-t D] FILE REGEXP: wait until FILE has a line matching REGEXP
// (e.g. a background command's stderr copied there by exitcode -stderr).
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgrep [-t D] FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	waitUntil(ts, args[1]+" in "+args[0], timeout, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && re.Match(b)
	})
}

// envfile FILE: set the KEY=VALUE (and export KEY=VALUE) lines of FILE in
// the script's environment, as `eval "$(distlock acquire ...)"` would.
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: envfile FILE")
	}
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			ts.Setenv(k, v)
		}
	}
}
