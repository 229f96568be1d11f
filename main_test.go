package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/cmd"
	"github.com/distlock/distlock/internal/backend/file"
)

// TestMain registers distlock as a command the scenarios can exec: the test
// binary re-runs itself as distlock, so every scenario drives real
// processes with real signals.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"distlock": distlockMain,
		"exitcode": exitcodeMain,
	})
}

// testTmpRootEnv names the directory that stands for /tmp in a scenario:
// its distlock (this test binary) keeps the file engine's default lock
// directory there (file.SetTestTmpRoot), so that no scenario uses the
// machine's /tmp/distlock-<uid>, nor another scenario's. The distlock
// binary reads no such variable: its default is /tmp/distlock-<uid>,
// whatever the environment.
const testTmpRootEnv = "DISTLOCK_TEST_TMP_ROOT"

// isolateTmp gives the scenario its own stand-in for /tmp: $WORK/tmp.
func isolateTmp(env *testscript.Env) {
	env.Setenv(testTmpRootEnv, filepath.Join(env.WorkDir, "tmp"))
}

// distlockMain is distlock as the scenarios run it, its default lock
// directory in the scenario's stand-in for /tmp. It refuses to run
// without one rather than lock in the machine's /tmp.
func distlockMain() {
	root := os.Getenv(testTmpRootEnv)
	if root == "" {
		fmt.Fprintf(os.Stderr, "distlock (test binary): %s is unset: the scenario's Setup must call isolateTmp\n", testTmpRootEnv)
		os.Exit(2)
	}
	file.SetTestTmpRoot(root)
	os.Exit(cmd.Execute(context.Background()))
}

// exitcodeMain is `exitcode [-stderr FILE] N COMMAND [ARGS...]`: run COMMAND with our
// stdio and succeed only if it exits with status N (128+S for signal S).
// testscript's exec checks success only; distlock's exit codes are its API.
func exitcodeMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: exitcode N COMMAND [ARGS...]")
		os.Exit(2)
	}
	args := os.Args[1:]
	var stderr io.Writer = os.Stderr
	if len(args) > 2 && args[0] == "-stderr" {
		// Also copy the command's stderr to a file that the script can
		// wait on (waitgrep) while the command still runs.
		f, err := os.Create(args[1])
		if err != nil {
			fmt.Fprintf(os.Stderr, "exitcode: %v\n", err)
			os.Exit(2)
		}
		// os.File is unbuffered: nothing to flush before os.Exit.
		stderr = io.MultiWriter(os.Stderr, f)
		args = args[2:]
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: exitcode [-stderr FILE] N COMMAND [ARGS...]")
		os.Exit(2)
	}
	c := exec.Command(args[1], args[2:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, stderr
	// Pass on the signals a script sends (kill -INT name) to the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := c.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "exitcode: %v\n", err)
		os.Exit(2)
	}
	go func() {
		for s := range sigs {
			c.Process.Signal(s)
		}
	}()
	err = c.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintf(os.Stderr, "exitcode: %v\n", err)
		os.Exit(2)
	}
	got := c.ProcessState.ExitCode()
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		got = 128 + int(ws.Signal())
	}
	if got != want {
		fmt.Fprintf(os.Stderr, "exitcode: %s exited %d, want %d\n", args[1], got, want)
		os.Exit(1)
	}
	os.Exit(0)
}
