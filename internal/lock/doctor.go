package lock

import (
	"context"
	"fmt"
	"time"
)

// Doctor is the one optional capability of a Backend: an engine that
// implements it checks its own settings for `distlock doctor` (Redis's
// eviction policy, etcd's member count, the file engine's filesystem, ...)
// and reads its own clock. It is optional because nothing else needs it and
// an engine without it still locks correctly; doctor then says that the
// engine's settings were not checked. docs/ARCHITECTURE.md ("The engine
// contract") explains why this is the only optional method.
type Doctor interface {
	// Doctor runs the engine's own checks against req and returns one
	// Check per finding. It never fails as a whole: a check it cannot make
	// is itself a Check (usually a warning saying why). It returns
	// promptly when ctx ends.
	Doctor(ctx context.Context, req DoctorRequest) []Check
}

// DoctorRequest is what an engine's checks are measured against.
type DoctorRequest struct {
	// Key is the scratch key doctor takes and releases (without the
	// prefix); engines use it where a check needs a real key name (Redis
	// ACL key patterns).
	Key string
	// TTL is the --ttl the user means to run with.
	TTL time.Duration
	// Timeout bounds one request to the engine (--connect-timeout).
	Timeout time.Duration
}

// TimeoutOr is r.Timeout, or fallback when r has none.
func (r DoctorRequest) TimeoutOr(fallback time.Duration) time.Duration {
	if r.Timeout <= 0 {
		return fallback
	}
	return r.Timeout
}

// RequestContext makes a context for one request of a check, under the
// check's context and bounded by the request timeout.
type RequestContext func() (context.Context, context.CancelFunc)

// RequestContexts is a RequestContext under ctx, bounded by
// r.TimeoutOr(fallback).
func (r DoctorRequest) RequestContexts(ctx context.Context, fallback time.Duration) RequestContext {
	timeout := r.TimeoutOr(fallback)
	return func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, timeout) }
}

// CheckStatus is a check's verdict.
type CheckStatus string

const (
	// CheckOK: nothing to change.
	CheckOK CheckStatus = "ok"
	// CheckWarning: worth knowing, or not checkable; locks still work.
	CheckWarning CheckStatus = "warning"
	// CheckProblem: something to change before trusting the lock.
	CheckProblem CheckStatus = "problem"
)

// Check is one finding of `distlock doctor`.
type Check struct {
	Name   string      // short and stable: "latency", "maxmemory-policy"
	Status CheckStatus //
	Detail string      // what was found, with the figures
	Fix    string      // what to change; empty when Status is CheckOK
}

// ClockDrift is the clock-drift allowance ρ of docs/ARCHITECTURE.md
// ("Timing"): a holder counts its lease as TTL·(1−ρ), so an engine's clock
// may run up to 1 % faster than ours. The keeper counts leases with it
// (renew.Drift) and engines judge their clocks by it.
const ClockDrift = 0.01

// ValidityDelta is the fixed margin δ of docs/ARCHITECTURE.md ("Timing")
// that a lease's validity keeps back besides the drift allowance:
// validUntil = s + TTL·(1−ρ) − δ. The keeper (renew.Delta), Redlock's
// validity and the engines' doctor checks count with it.
const ValidityDelta = 2 * time.Millisecond

// ClockOffsetCheck judges the offset between the engine's wall clock and
// ours (engine minus local, measured to within ±uncertainty). TTLs are
// relative, so a steady offset does not shorten a lease; but an offset
// larger than the drift allowance of a lease (TTL·ρ) means one of the two
// clocks is not synchronised, and when the engine's is corrected by a step
// forward, every lease on it expires that much early.
func ClockOffsetCheck(offset, uncertainty, ttl time.Duration, how string) Check {
	allow := time.Duration(float64(ttl) * ClockDrift)
	detail := fmt.Sprintf("the engine's clock is %s this machine's (%s); distlock's drift allowance at --ttl %s is %s",
		Offset(offset, uncertainty), how, ttl, RoundSmall(allow))
	if offset <= allow && -offset <= allow {
		return Check{Name: "clock", Status: CheckOK, Detail: detail}
	}
	return Check{
		Name: "clock", Status: CheckWarning, Detail: detail,
		Fix: "synchronise both clocks (NTP: chrony or systemd-timesyncd): if the engine's clock is stepped forward to correct it, every lease on it expires that much early",
	}
}

// ClockRateCheck judges how much faster the engine's clock runs than ours
// (a fraction: 0.02 is 2 % faster, negative is slower), measured to within
// ±uncertainty. An engine whose clock runs fast expires leases early in our
// time; distlock allows for ClockDrift of that.
func ClockRateCheck(fast, uncertainty float64, how string) Check {
	pct := func(f float64) string { return fmt.Sprintf("%.2f%%", f*100) }
	side := "faster"
	if fast < 0 {
		side = "slower"
	}
	abs := fast
	if abs < 0 {
		abs = -abs
	}
	detail := fmt.Sprintf("the engine's lease clock runs %s (±%s) %s than this machine's (%s); distlock allows %s",
		pct(abs), pct(uncertainty), side, how, pct(ClockDrift))
	switch {
	case fast-uncertainty > ClockDrift:
		return Check{Name: "clock", Status: CheckProblem, Detail: detail,
			Fix: "the engine expires leases before distlock stops its command: fix the clock source (NTP) of the engine's servers and of this machine"}
	case uncertainty > ClockDrift/2:
		return Check{Name: "clock", Status: CheckWarning, Detail: detail,
			Fix: "the round trips were too slow or uneven to measure the clock to better than half the allowance: run doctor again closer to the engine"}
	case fast+uncertainty > ClockDrift:
		return Check{Name: "clock", Status: CheckWarning, Detail: detail,
			Fix: "the engine's clock may run faster than distlock allows: check the clock source (NTP) of the engine's servers"}
	case fast < -ClockDrift:
		return Check{Name: "clock", Status: CheckWarning, Detail: detail,
			Fix: "a slow engine clock keeps leases longer than --ttl (safe, but a crashed holder's lock lasts longer): check the clock source (NTP) of the engine's servers"}
	}
	return Check{Name: "clock", Status: CheckOK, Detail: detail}
}

// RoundSmall rounds a duration for a doctor line: µs below a millisecond,
// 0.1 ms below a second, ms above.
func RoundSmall(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// ClockReadings is how many times ReadClock asks the engine for its clock.
const ClockReadings = 5

// ReadClock asks the engine for its wall clock ClockReadings times (read,
// each call bounded by a context from newCtx) and keeps the reading with
// the shortest round trip: the engine read its clock within that round
// trip, so the offset (engine minus local) is known to within half of it.
func ReadClock(newCtx func() (context.Context, context.CancelFunc), read func(context.Context) (time.Time, error)) (offset, uncertainty, bestRTT time.Duration, err error) {
	best := time.Duration(-1)
	for range ClockReadings {
		ctx, cancel := newCtx()
		sent := time.Now()
		server, err := read(ctx)
		rtt := time.Since(sent)
		cancel()
		if err != nil {
			return 0, 0, 0, err
		}
		if best < 0 || rtt < best {
			best = rtt
			// Wall clocks only: the engine's time has no monotonic reading.
			offset = server.Sub(sent.Add(rtt / 2).Round(0))
		}
	}
	return offset, best / 2, best, nil
}
