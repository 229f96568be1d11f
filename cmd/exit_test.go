package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/runner"
)

// TestCodeFor pins every documented exit code and the line said with it.
func TestCodeFor(t *testing.T) {
	busy := &lock.BusyError{Holder: lock.Holder{Key: "k", Token: 9, Meta: lock.Meta{Host: "host-b", PID: 7}, ExpiresIn: -1}}
	for _, tc := range []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"success", nil, 0, ""},
		{"command succeeded", commandStatus(0), 0, ""},
		{"break declined", declined("k"), 1, "k was not broken: the answer was not yes"},
		{"doctor: nothing is a problem", doctorProblems(nil), 0, ""},
		{"doctor: one problem", doctorProblems([]string{"maxmemory-policy"}), 1, "doctor found a problem: maxmemory-policy (see its fix above)"},
		{"doctor: two problems", doctorProblems([]string{"maxmemory-policy", "acl"}), 1, "doctor found 2 problems: maxmemory-policy, acl (see their fixes above)"},
		{"command's own status", commandStatus(3), 3, ""},
		{"command killed by signal 9", commandStatus(137), 137, ""},
		{"status: a key is free", withCode(exitFree), 3, ""},
		{"break: not held", notHeld("k"), 3, "k is not held; nothing to break"},
		{"usage", usageError(errors.New("list takes at most one PREFIX")), 64, "list takes at most one PREFIX (see --help)"},
		{"usage once", usageError(usageError(errors.New("bad"))), 64, "bad (see --help)"},
		{"usage keeps a code", usageError(notHeld("k")), 3, "k is not held; nothing to break"},
		{"usage: one line, with cobra's suggestion", usageError(errors.New("unknown command \"statu\" for \"distlock\"\n\nDid you mean this?\n\tstatus\n")), 64, `unknown command "statu" for "distlock"; did you mean status? (see --help)`},
		{"usage: two suggestions", usageError(errors.New("unknown command \"lst\" for \"distlock\"\n\nDid you mean this?\n\tlist\n\tlast\n")), 64, `unknown command "lst" for "distlock"; did you mean list or last? (see --help)`},
		{"credentials refused", &lock.UnavailableError{Msg: "redis at x refused the credentials", Refused: true}, 77, "redis at x refused the credentials"},
		{"invalid input", lock.Invalidf("--ttl must be at least 1s, got 500ms"), 64, "--ttl must be at least 1s, got 500ms"},
		{"wrapped invalid input", fmt.Errorf("opening: %w", lock.Invalidf("bad URL")), 64, "opening: bad URL"},
		{"engine unreachable", &lock.UnavailableError{Msg: "redis at x did not answer"}, 69, "redis at x did not answer"},
		{"internal", errors.New("boom\nat line 2"), 70, "internal error: boom"},
		{"command's end unknown", commandStatus(child.UnknownStatus), 70, ""},
		{"busy", busyError(busy, 0, exitBusy, false), 75, busy.Error() + " (use --wait to wait for it)"},
		{"busy after waiting", busyError(fmt.Errorf("acquire: %w", busy), 3e9, exitBusy, false), 75, busy.Error() + " (gave up after --wait 3s)"},
		{"busy, quiet", busyError(busy, 0, exitBusy, true), 75, ""},
		{"busy, --busy-exit-code 0", busyError(busy, 0, 0, false), 0, busy.Error() + " (use --wait to wait for it)"},
		{"busy, --busy-exit-code 9 --quiet", busyError(busy, 0, 9, true), 9, ""},
		{"busy unconverted", busy, 75, busy.Error()},
		{"break: other token", otherToken("k", 18, 17), 75, "k is now held under token 18, not 17; left alone"},
		{"break: broken, not let go", otherToken("k", 0, 17), 75, "k was already broken and its holder has not let go yet; left alone"},
		{"lost", &runner.LostError{Key: "k", Reason: lock.ErrNotHeld}, 76, (&runner.LostError{Key: "k", Reason: lock.ErrNotHeld}).Error()},
		{"stale handle", staleHandle(lock.Handle{Key: "k", Token: 17}), 76, "the lock on k (token 17) is no longer held by this handle: it expired, was broken or was taken over"},
		{"max-hold", &runner.MaxHoldError{Key: "k", MaxHold: 2e9}, 124, "the command held k for --max-hold 2s and was terminated; the lock is released"},
		{"not executable", &child.StartError{Msg: "command cannot be executed: ./x"}, 126, "command cannot be executed: ./x"},
		{"not found", &child.StartError{NotFound: true, Msg: "command not found: x"}, 127, "command not found: x"},
		{"interrupted by SIGINT", &runner.InterruptedError{Key: "k", Signal: syscall.SIGINT}, 130, (&runner.InterruptedError{Key: "k", Signal: syscall.SIGINT}).Error()},
		{"interrupted by SIGTERM", &runner.InterruptedError{Key: "k", Signal: syscall.SIGTERM}, 143, (&runner.InterruptedError{Key: "k", Signal: syscall.SIGTERM}).Error()},
	} {
		code, msg := codeFor(tc.err)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: codeFor = %d %q, want %d %q", tc.name, code, msg, tc.code, tc.msg)
		}
	}
}

// TestCommandLineMistakesExit64 runs the command tree on mistakes cobra
// finds before any command runs: each must be exit 64 with one line that
// ends in "(see --help)". None of them reaches an engine.
func TestCommandLineMistakesExit64(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand" for "distlock"`},
		{[]string{"statu", "k"}, `unknown command "statu" for "distlock"; did you mean status?`},
		{[]string{"status", "--outptu", "json", "k"}, "unknown flag: --outptu; did you mean --output?"},
		{[]string{"--bogus=1", "status", "k"}, "unknown flag: --bogus"},
		{[]string{"status", "k", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"run", "--bogus", "--key", "k", "--", "true"}, "unknown flag: --bogus"},
		{[]string{"status", "-o"}, "flag needs an argument"},
		{[]string{"run", "--key", "k"}, "no command given"},
		{[]string{"status"}, "status needs at least one KEY"},
		{[]string{"list", "a", "b"}, "list takes at most one PREFIX"},
		{[]string{"break"}, "break takes exactly one KEY"},
		{[]string{"break", "a", "b"}, "break takes exactly one KEY"},
		{[]string{"acquire", "x"}, "acquire takes no arguments"},
		{[]string{"extend", "x"}, "extend takes no arguments"},
		{[]string{"release", "x"}, "release takes no arguments"},
		{[]string{"doctor", "x"}, "doctor takes no arguments"},
		{[]string{"version", "x"}, `unknown command "x" for "distlock version"`},
		{[]string{"completion", "bash", "x"}, `"distlock completion bash"`},
	} {
		var stdout, stderr bytes.Buffer
		root := NewRootCommand(nil, &stdout, &stderr)
		root.SetArgs(tc.args)
		code, msg := codeFor(execute(context.Background(), root))
		if code != exitUsage || !strings.Contains(msg, tc.msg) || !strings.HasSuffix(msg, " (see --help)") || strings.Contains(msg, "\n") {
			t.Errorf("distlock %s: exit %d %q, want 64 and a line with %q ending in (see --help)", strings.Join(tc.args, " "), code, msg, tc.msg)
		}
		if stdout.Len() != 0 || stderr.Len() != 0 {
			t.Errorf("distlock %s: cobra printed %q %q; Execute says what went wrong", strings.Join(tc.args, " "), stdout.String(), stderr.String())
		}
	}
}

// TestDurationFlagsSayWhatToWrite: every duration flag given something
// that is not a duration says the one line --wait says, exit 64.
func TestDurationFlagsSayWhatToWrite(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "--key", "k", "--ttl", "soon", "--", "true"}, `--ttl must be a duration such as 30s or 10m; got "soon"`},
		{[]string{"run", "--key", "k", "--ttl", "5", "--", "true"}, `--ttl must be a duration such as 30s or 10m; got "5"`},
		{[]string{"run", "--key", "k", "--kill-grace=2", "--", "true"}, `--kill-grace must be a duration such as 30s or 10m; got "2"`},
		{[]string{"--connect-timeout", "3", "status", "k"}, `--connect-timeout must be a duration such as 30s or 10m; got "3"`},
		{[]string{"doctor", "--ttl", "soon"}, `--ttl must be a duration such as 30s or 10m; got "soon"`},
		{[]string{"run", "--key", "k", "--wait", "5", "--", "true"}, `--wait must be a duration such as 30s or 10m, or forever; got "5"`},
	} {
		root := NewRootCommand(nil, io.Discard, io.Discard)
		root.SetArgs(tc.args)
		if code, msg := codeFor(execute(context.Background(), root)); code != exitUsage || msg != tc.msg {
			t.Errorf("distlock %s: exit %d %q, want 64 %q", strings.Join(tc.args, " "), code, msg, tc.msg)
		}
	}
}

// TestTTLUnderOneSecondExits64: run and extend refuse a --ttl under 1s
// alike, an explicit 0 too (extend takes the handle's TTL only when --ttl
// is not given), before reaching an engine.
func TestTTLUnderOneSecondExits64(t *testing.T) {
	h := lock.Handle{Key: "k", Owner: "o", Token: 1, TTLms: 30000}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "--key", "k", "--ttl", "0", "--", "true"}, "--ttl must be at least 1s, got 0s"},
		{[]string{"extend", "--handle", h.Encode(), "--ttl", "0"}, "--ttl must be at least 1s, got 0s"},
		{[]string{"extend", "--handle", h.Encode(), "--ttl", "0s"}, "--ttl must be at least 1s, got 0s"},
		{[]string{"extend", "--handle", h.Encode(), "--ttl", "-1s"}, "--ttl must be at least 1s, got -1s"},
		{[]string{"extend", "--handle", h.Encode(), "--ttl", "500ms"}, "--ttl must be at least 1s, got 500ms"},
	} {
		root := NewRootCommand(nil, io.Discard, io.Discard)
		root.SetArgs(append([]string{"--backend", "nope://"}, tc.args...))
		if code, msg := codeFor(execute(context.Background(), root)); code != exitUsage || msg != tc.msg {
			t.Errorf("distlock %s: exit %d %q, want 64 %q", strings.Join(tc.args, " "), code, msg, tc.msg)
		}
	}
}

// TestHelpIsNotAMistake: asking for help, with or without a command, is exit 0.
func TestHelpIsNotAMistake(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"help"}, {"run", "--help"}, {"completion"}} {
		var stdout bytes.Buffer
		root := NewRootCommand(nil, &stdout, &stdout)
		root.SetArgs(args)
		if code, msg := codeFor(execute(context.Background(), root)); code != exitOK || msg != "" || !strings.Contains(stdout.String(), "Usage:") {
			t.Errorf("distlock %s: exit %d %q, output %q; want 0 and the help", strings.Join(args, " "), code, msg, stdout.String())
		}
	}
}

// A handle's hold or release that the engine did not answer in time is
// exit 69 with the engine's own line (it says what became of the lock),
// as every engine failure: etcd's settle gives such an error wrapping the
// context's deadline, which codeFor alone takes for an internal error.
func TestHoldTimeoutExits69(t *testing.T) {
	err := fmt.Errorf("etcd hold k (no answer, and the lock could not be read back: it is held either for 30s more or until it was due to expire): %w", context.DeadlineExceeded)
	if code, _ := codeFor(err); code != exitInternal {
		t.Fatalf("codeFor of the raw error = %d; the test's premise (70 without holdError) no longer holds", code)
	}
	code, msg := codeFor(holdError(err))
	if code != exitUnavailable || !strings.Contains(msg, "it is held either for 30s more or until it was due to expire") {
		t.Fatalf("codeFor(holdError(err)) = %d, %q; want %d with the engine's line", code, msg, exitUnavailable)
	}
	if holdError(nil) != nil {
		t.Fatal("holdError(nil) is not nil")
	}
	refused := &lock.UnavailableError{Msg: "refused", Refused: true}
	if holdError(refused) != error(refused) {
		t.Fatal("holdError changed an engine error that was already one")
	}
}
