package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/runner"
)

// Exit codes, as the README's "Exit codes" table and each command's help
// document them. This file is the only place that turns errors into codes.
const (
	exitOK          = 0
	exitDeclined    = 1 // break: the person at the terminal did not answer yes
	exitProblem     = 1 // doctor: a check found a problem
	exitFree        = 3 // status/break: the key is not held
	exitUsage       = 64
	exitUnavailable = 69
	exitNoPerm      = 77 // EX_NOPERM: the engine refused our credentials or permissions; retrying cannot help
	exitInternal    = 70
	exitBusy        = 75 // the default of --busy-exit-code
	exitLost        = 76
	exitMaxHold     = 124 // as timeout(1)
	exitCannotExec  = 126 // as shells: the command exists but cannot be executed
	exitNotFound    = 127 // as shells: the command does not exist
	exitSignal      = 128 // + N: killed (or interrupted) by signal N
)

// statusError ends a command with a code and, when msg is set, one line.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// withCode ends the command with code and no message.
func withCode(code int) error { return &statusError{code: code} }

// usageError marks a flag or argument mistake (exit 64). An error that
// already carries its code is left as it is. The message is kept to one
// line: cobra's "Did you mean this?" lines under an unknown command become
// "; did you mean status?".
func usageError(err error) error {
	var se *statusError
	if errors.As(err, &se) {
		return err
	}
	msg := lock.FirstLine(err)
	if s := suggestions(err.Error()); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &statusError{code: exitUsage, msg: msg + " (see --help)"}
}

// suggestions are the names cobra lists under "Did you mean this?".
func suggestions(msg string) []string {
	_, tail, ok := strings.Cut(msg, "Did you mean this?\n")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(tail, "\n") {
		if name := strings.TrimSpace(line); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// commandExit passes the command's own exit status on as distlock's.
type commandExit struct{ status int }

func (e *commandExit) Error() string {
	return fmt.Sprintf("the command exited with status %d", e.status)
}

// commandStatus is run's result for a command that ended with status
// (0 is not an error).
func commandStatus(status int) error {
	if status == 0 {
		return nil
	}
	return &commandExit{status: status}
}

// busyError turns a busy result into --busy-exit-code and one line naming
// the holder (none with --quiet); nil when err is not a busy error.
func busyError(err error, wait time.Duration, code int, quiet bool) error {
	var busy *lock.BusyError
	if !errors.As(err, &busy) {
		return nil
	}
	if quiet {
		return withCode(code)
	}
	hint := " (use --wait to wait for it)"
	if wait != 0 {
		hint = fmt.Sprintf(" (gave up after --wait %s)", wait)
	}
	return &statusError{code: code, msg: busy.Error() + hint}
}

// skippedRun is a run whose slot was done already as run exits with it:
// 0, and one line naming the slot (none with --quiet); nil when err is not
// a skipped run.
func skippedRun(err error, quiet bool) error {
	var sk *ledger.SkippedError
	if !errors.As(err, &sk) {
		return nil
	}
	if quiet {
		return withCode(exitOK)
	}
	return &statusError{code: exitOK, msg: printable(sk.Error())}
}

// declined: break asked and the answer was not yes.
func declined(key string) error {
	return &statusError{code: exitDeclined, msg: key + " was not broken: the answer was not yes"}
}

// notHeld: break found nothing to break.
func notHeld(key string) error {
	return &statusError{code: exitFree, msg: key + " is not held; nothing to break"}
}

// doctorProblems: doctor found problems in the checks named; nil when
// there are none (warnings alone are success).
func doctorProblems(names []string) error {
	switch len(names) {
	case 0:
		return nil
	case 1:
		return &statusError{code: exitProblem, msg: "doctor found a problem: " + names[0] + " (see its fix above)"}
	}
	return &statusError{code: exitProblem, msg: fmt.Sprintf("doctor found %d problems: %s (see their fixes above)", len(names), strings.Join(names, ", "))}
}

// otherToken: break --token N found the key held under another token.
func otherToken(key string, now, want uint64) error {
	if now == 0 {
		return &statusError{code: exitBusy, msg: fmt.Sprintf("%s was already broken and its holder has not let go yet; left alone", key)}
	}
	return &statusError{code: exitBusy, msg: fmt.Sprintf("%s is now held under token %d, not %d; left alone", key, now, want)}
}

// changedHands: break found the holders it showed gone and h holding key
// now; h is left alone.
func changedHands(key string, h lock.Holder, now time.Time) error {
	return &statusError{code: exitBusy, msg: fmt.Sprintf("%s is now %s; left alone", printable(key), printable(lock.DescribeHolder(h, now)))}
}

// staleHandle: extend or release was given a handle that no longer holds
// its lock.
func staleHandle(h lock.Handle) error {
	return &statusError{code: exitLost, msg: fmt.Sprintf("the lock on %s (token %d) is no longer held by this handle: it expired, was broken or was taken over", h.Key, h.Token)}
}

// codeFor is the exit code for err and the one line (without the
// "distlock: " prefix) that says what went wrong; msg is empty when
// nothing is to be said. nil is success.
func codeFor(err error) (code int, msg string) {
	if err == nil {
		return exitOK, ""
	}
	msg = lock.FirstLine(err)
	var (
		se   *statusError
		ce   *commandExit
		st   *child.StartError
		lost *runner.LostError
		maxh *runner.MaxHoldError
		intr *runner.InterruptedError
		busy *lock.BusyError
		ue   *lock.UnavailableError
	)
	switch {
	case errors.As(err, &se):
		return se.code, msg
	case errors.As(err, &ce):
		if ce.status == child.UnknownStatus {
			return exitInternal, ""
		}
		return ce.status, ""
	case errors.As(err, &st):
		if st.NotFound {
			return exitNotFound, msg
		}
		return exitCannotExec, msg
	case errors.As(err, &lost):
		return exitLost, msg
	case errors.As(err, &maxh):
		return exitMaxHold, msg
	case errors.As(err, &intr):
		return exitSignal + int(intr.Signal), msg
	case errors.As(err, &busy):
		return exitBusy, msg
	case errors.Is(err, lock.ErrInvalid):
		return exitUsage, msg
	case errors.As(err, &ue) && ue.Refused:
		return exitNoPerm, msg
	case errors.Is(err, lock.ErrUnavailable):
		return exitUnavailable, msg
	}
	return exitInternal, "internal error: " + msg
}
