package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/runner"
)

// Exit codes, as documented in the README ("Exit codes").
const (
	exitOK          = 0
	exitFree        = 3 // status/break: the key is not held
	exitUsage       = 64
	exitUnavailable = 69
	exitInternal    = 70
	exitBusy        = 75
	exitLost        = 76
	exitMaxHold     = 124 // as timeout(1)
)

// statusError ends a command with a code and, when msg is set, one line.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// withCode ends the command with code and no message (e.g. the child's status).
func withCode(code int) error { return &statusError{code: code} }

// usageError marks a flag or argument mistake (exit 64).
func usageError(err error) error {
	return &statusError{code: exitUsage, msg: err.Error() + " (see --help)"}
}

// exitCode is the one place where errors become exit codes and the one line
// on stderr that says what went wrong.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	code := exitInternal
	msg := err.Error()
	var (
		se   *statusError
		busy *lock.BusyError
		lost *runner.LostError
		maxh *runner.MaxHoldError
		intr *runner.InterruptedError
		st   *child.StartError
	)
	switch {
	case errors.As(err, &se):
		code = se.code
	case errors.As(err, &st):
		code = st.Code
	case errors.As(err, &lost):
		code = exitLost
	case errors.As(err, &maxh):
		code = exitMaxHold
	case errors.As(err, &intr):
		code = 128 + int(intr.Signal)
	case errors.As(err, &busy):
		code = exitBusy
	case errors.Is(err, lock.ErrInvalid):
		code = exitUsage
	case errors.Is(err, lock.ErrUnavailable):
		code = exitUnavailable
	case strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") || strings.Contains(msg, "accepts ") && strings.Contains(msg, " arg(s)"):
		code = exitUsage
		msg += " (see --help)"
	default:
		msg = "internal error: " + msg
	}
	if msg != "" {
		fmt.Fprintln(stderr, "distlock: "+firstLine(msg))
	}
	return code
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
