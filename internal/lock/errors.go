package lock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrHeld: the key is held by someone else.
	ErrHeld = errors.New("lock is held")
	// ErrNotHeld: the lease is not (or no longer) ours, or the key is free.
	ErrNotHeld = errors.New("lock is not held")
	// ErrUnavailable: the engine could not be reached or refused us (auth).
	ErrUnavailable = errors.New("backend unavailable")
)

// BusyError is returned when a key is held by someone else.
type BusyError struct {
	Holder Holder
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s is busy: %s", e.Holder.Key, DescribeHolder(e.Holder, time.Now()))
}

func (e *BusyError) Is(target error) bool { return target == ErrHeld }

// DescribeHolder gives the one-phrase description of a holder used in busy
// and waiting lines: "held by host-b pid 4123 (token 17) for 2m13s, expires in 28s".
func DescribeHolder(h Holder, now time.Time) string {
	s := "held by " + orUnknown(h.Meta.Host)
	if h.Meta.PID > 0 {
		s += fmt.Sprintf(" pid %d", h.Meta.PID)
	}
	if h.Token != 0 {
		s += fmt.Sprintf(" (token %d)", h.Token)
	}
	if !h.AcquiredAt.IsZero() {
		s += " for " + RoundDuration(now.Sub(h.AcquiredAt))
	}
	if h.ExpiresIn >= 0 {
		s += ", expires in " + RoundDuration(h.ExpiresIn)
	}
	if h.Hold != "" {
		// No process renews it: kept until it expires (min-hold, acquire).
		s += " (" + h.Hold + ")"
	}
	return s
}

// UnavailableError wraps an engine failure with ErrUnavailable; Msg must
// already be free of secrets. Refused marks an engine that answered and
// refused us (credentials, permissions): trying again cannot help.
type UnavailableError struct {
	Msg     string
	Err     error
	Refused bool
}

// Transient reports whether err is an engine failure that may pass (a
// reset connection, a timeout, a failover): a waiter tries again.
func Transient(err error) bool {
	var ue *UnavailableError
	return errors.As(err, &ue) && !ue.Refused
}

func (e *UnavailableError) Error() string { return e.Msg }
func (e *UnavailableError) Is(target error) bool {
	return target == ErrUnavailable
}
func (e *UnavailableError) Unwrap() error { return e.Err }

func orUnknown(s string) string {
	if s == "" {
		return "unknown host"
	}
	return s
}

// RoundDuration prints d the way a person reads it: 2m13s, 28s, 850ms.
func RoundDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// ErrInvalid marks bad input from the user (flags, keys, URLs): exit 64.
var ErrInvalid = errors.New("invalid argument")

// InvalidError is a usage error whose message says what to fix.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string        { return e.Msg }
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalidf builds an InvalidError.
func Invalidf(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// ErrLimitMismatch: the key is held as a semaphore with another --limit.
var ErrLimitMismatch = errors.New("limit mismatch")

// LimitMismatchError says which limit the current holders use.
type LimitMismatchError struct {
	Key        string
	Want, Have int
}

func (e *LimitMismatchError) Error() string {
	return fmt.Sprintf("%s is held with --limit %d, not %d: every holder of a key must use the same --limit", e.Key, e.Have, e.Want)
}

func (e *LimitMismatchError) Is(target error) bool {
	return target == ErrLimitMismatch || target == ErrInvalid
}

// FirstLine is an error's first line: drivers' errors can run on with
// server-side detail that a one-line message (an error, a doctor line)
// does not need.
func FirstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
