package lock

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// The doctor checks several engines make the same way: each engine reads
// its own facts (its clock, the lease it grants) and these judge them.

// CannotCheck is the warning of a check that could not ask the engine
// ("cannot <what>: <the error's first line>"); fix says what to do.
func CannotCheck(name, what string, err error, fix string) Check {
	return Check{Name: name, Status: CheckWarning, Detail: "cannot " + what + ": " + FirstLine(err), Fix: fix}
}

// Worse is the worse of two statuses: a problem over a warning over ok.
func Worse(a, b CheckStatus) CheckStatus {
	if b == CheckProblem || a == CheckOK {
		return b
	}
	return a
}

// WorstCheck is the first of checks with the worst status; checks is not
// empty.
func WorstCheck(checks []Check) Check {
	worst := checks[0]
	for _, c := range checks[1:] {
		if Worse(worst.Status, c.Status) != worst.Status {
			worst = c
		}
	}
	return worst
}

// Offset says where one clock is against another, d (one minus the
// other) known to within ±unc: "10ms (±1ms) ahead of", "5s (±1ms) behind".
func Offset(d, unc time.Duration) string {
	side := "ahead of"
	if d < 0 {
		side, d = "behind", -d
	}
	return fmt.Sprintf("%s (±%s) %s", RoundSmall(d), RoundSmall(unc), side)
}

// ServerClockCheck reads the engine's wall clock with ReadClock (read,
// each call bounded by a context from rctx) and judges it with
// ClockOffsetCheck. source names the reading ("TIME"); resolution, the
// reading's own granularity, is added to the uncertainty.
func ServerClockCheck(rctx RequestContext, ttl time.Duration, source string, resolution time.Duration, read func(context.Context) (time.Time, error)) Check {
	offset, unc, best, err := ReadClock(rctx, read)
	if err != nil {
		return CannotCheck("clock", "read the server's clock ("+source+")", err, "make sure both clocks are synchronised (NTP)")
	}
	return ClockOffsetCheck(offset, unc+resolution, ttl, fmt.Sprintf("%s, best of %d round trips: %s", source, ClockReadings, best.Round(time.Microsecond)))
}

// Tick brackets the moment an engine's whole-second counter (its Date
// header, a lease's seconds left) stepped on from V: after Lo, when the
// last read that still said V was sent, and before Hi, when the first
// read that said the next value came back (our clock).
type Tick struct {
	V      int64
	Lo, Hi time.Time
}

// Mid is the middle of the bracket, and Half its half width: the tick
// happened at Mid ± Half.
func (t Tick) Mid() time.Time { return t.Lo.Add(t.Half()) }

// Half is half the bracket's width.
func (t Tick) Half() time.Duration { return t.Hi.Sub(t.Lo) / 2 }

// WaitTick reads the counter (pause between reads) until it moves by
// exactly step (+1 or −1) from one read to the next; a larger move
// brackets nothing and is read past. It gives up after within.
func WaitTick(ctx context.Context, within, pause time.Duration, step int64, read func(context.Context) (int64, error)) (Tick, error) {
	deadline := time.Now().Add(within)
	var last Tick // last.V, and last.Lo: when the read that said it was sent
	for have := false; time.Now().Before(deadline); have = true {
		if have && pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return Tick{}, ctx.Err()
			}
		}
		sent := time.Now()
		v, err := read(ctx)
		if err != nil {
			return Tick{}, err
		}
		if have && v == last.V+step {
			return Tick{V: last.V, Lo: last.Lo, Hi: time.Now()}, nil
		}
		last = Tick{V: v, Lo: sent}
	}
	return Tick{}, fmt.Errorf("the server's seconds did not turn within %s", within)
}

// GrantedTTLCheck judges the lease (or session) an engine grants when
// asked for one of --ttl: shorter than ttl is a problem (it would end
// while its holder runs, so distlock refuses that --ttl there; shorter
// says what to do), longer than ttl+slack a warning (a crashed holder's
// lock stays taken that long; longer says what to do). what names the
// lease ("lease", "session"); how, when not empty, how the engine counts.
func GrantedTTLCheck(name, what string, ttl, granted, slack time.Duration, how, shorter, longer string) Check {
	detail := fmt.Sprintf("--ttl %s: the server grants a %s of %s", ttl, what, granted)
	if how != "" {
		detail += " (" + how + ")"
	}
	switch {
	case granted < ttl:
		return Check{Name: name, Status: CheckProblem, Detail: detail, Fix: "distlock refuses this --ttl here: " + shorter}
	case granted > ttl+slack:
		return Check{Name: name, Status: CheckWarning, Detail: detail,
			Fix: fmt.Sprintf("a crashed holder's lock stays taken for %s, not --ttl %s (a live one still stops its command by --ttl): %s", granted, ttl, longer)}
	}
	return Check{Name: name, Status: CheckOK, Detail: detail}
}

// Case is one verdict a check may reach: FirstCase picks the first that
// applies (When). Status is CheckOK when empty.
type Case struct {
	When   bool
	Status CheckStatus
	Detail string
	Fix    string
}

// FirstCase is the check named name of the first of cases that applies,
// else of otherwise.
func FirstCase(name string, cases []Case, otherwise Case) Check {
	for _, c := range cases {
		if c.When {
			otherwise = c
			break
		}
	}
	return Check{Name: name, Status: cmp.Or(otherwise.Status, CheckOK), Detail: otherwise.Detail, Fix: otherwise.Fix}
}
