package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/cmd"
)

// TestMain registers distlock as a command the scenarios can exec: the test
// binary re-runs itself as distlock, so every scenario drives real
// processes with real signals.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"distlock": func() { os.Exit(cmd.Execute(context.Background())) },
		"exitcode": exitcodeMain,
	})
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
