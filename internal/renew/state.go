package renew

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// effects are what the keeper's state asks of the world: send a renewal,
// arm its two timers, report a Loss. The keeper's loop (keeper.go)
// provides the real ones; the state's tests record them.
type effects interface {
	// renew sends one renewal, bounded by deadline; its result comes back
	// to onResult with sent and suspended.
	renew(sent time.Time, suspended time.Duration, deadline time.Time)
	renewIn(d time.Duration) // the next renewal is due in d
	termIn(d time.Duration)  // look at the term time again in d
	report(Loss)
}

// keeperState is what the keeper knows between events: the lease's
// validity, whether a renewal is in flight, the failures since the last
// good one, the Confirm callers waiting. Each on* method handles one event
// and returns true once the lease is lost (the Loss reported): the loop
// then ends. The state does no I/O and reads no clock of its own: now and
// clock are time.Now and the keeper's Clock, or a test's fakes.
type keeperState struct {
	t     Timing
	key   string
	clock Clock
	now   func() time.Time
	log   *slog.Logger
	fx    effects

	// validUntil is on the monotonic clock, corrected for every suspend
	// up to validSuspended (a reading of clock).
	validUntil     time.Time
	validSuspended time.Duration
	inflight       bool
	failures       int
	lastErr        error
	lastOK         time.Time
	slept          time.Duration // suspended since the last good renewal was sent
	late           lateness      // how late our timers fire: the SIGKILL's lead grows with it
	// Confirm callers, each answered by the first renewal sent after it
	// asked; again: one asked while a renewal was in flight.
	confirms []confirmReq
	again    bool
}

type confirmReq struct {
	at time.Time
	ch chan<- error
}

type result struct {
	sent      time.Time     // monotonic, just before the request was sent
	suspended time.Duration // the clock's Suspended at sent
	err       error
}

// newKeeperState is the state of a lease granted at granted (counted from
// just before its request was sent), with the clock's suspended time
// suspendedAtStart a moment after.
func newKeeperState(t Timing, key string, granted time.Time, suspendedAtStart time.Duration,
	clock Clock, now func() time.Time, log *slog.Logger, fx effects) *keeperState {
	return &keeperState{
		t: t, key: key, clock: clock, now: now, log: log, fx: fx,
		validUntil: t.ValidUntil(granted), validSuspended: suspendedAtStart,
		lastOK: granted,
	}
}

// termAt is when the loss is due for want of a renewal.
func (s *keeperState) termAt() time.Time { return s.t.TermAt(s.validUntil, s.lateNow()) }

// killAt is when the SIGKILL is due, reckoned now.
func (s *keeperState) killAt() time.Time { return s.t.KillAt(s.validUntil, s.lateNow()) }

// lateNow is the recent lateness of our timers.
func (s *keeperState) lateNow() time.Duration { return s.late.at(s.now()) }

// fired: one of the keeper's timers, due at due, is handled now (before
// its own on* method). How late it is counts towards the SIGKILL's lead
// and so the term time's (Timing.Lead); if that brings the term time
// forward, the term timer is re-armed for it.
func (s *keeperState) fired(due time.Time) {
	before := s.termAt()
	s.late.observe(due, s.now())
	if at := s.termAt(); at.Before(before) {
		s.fx.termIn(s.until(at))
	}
}

func (s *keeperState) until(at time.Time) time.Duration { return at.Sub(s.now()) }

// onRenewDue: the renewal timer fired.
func (s *keeperState) onRenewDue() (lost bool) {
	if s.checkSuspend() {
		return true
	}
	s.sendIfIdle()
	return false
}

// onPoke: a renewal is asked for now (a break may have happened).
func (s *keeperState) onPoke() (lost bool) { return s.onRenewDue() }

// onSuspendCheck: the periodic look for a suspend.
func (s *keeperState) onSuspendCheck() (lost bool) { return s.checkSuspend() }

// onAlert: the engine heard the lease may be gone (a local break): find
// out now rather than at the next renewal.
func (s *keeperState) onAlert() { s.sendIfIdle() }

// onConfirm: a Confirm caller waits for a renewal sent from now on.
func (s *keeperState) onConfirm(ch chan<- error) {
	s.confirms = append(s.confirms, confirmReq{at: s.now(), ch: ch})
	if s.inflight {
		s.again = true
		return
	}
	s.send()
}

// onTermDue: the term timer fired. The loss is reported unless a renewal
// (or nothing, after a re-arm) moved the term time on meanwhile.
func (s *keeperState) onTermDue() (lost bool) {
	if s.checkSuspend() {
		return true
	}
	if s.now().Before(s.termAt()) {
		s.fx.termIn(s.until(s.termAt()))
		return false
	}
	s.lose()
	return true
}

// onResult: the renewal in flight returned.
func (s *keeperState) onResult(r result) (lost bool) {
	s.inflight = false
	if errors.Is(r.err, lock.ErrNotHeld) {
		// Another holder may be running already: stop the command now,
		// not at the end of kill-grace.
		s.fx.report(Loss{
			Err:    errors.New("the engine says the lease is no longer ours (broken, expired or taken over)"),
			KillAt: s.t.LostKillAt(s.now(), s.validUntil, s.lateNow()),
		})
		return true
	}
	if s.checkSuspend() {
		return true
	}
	if r.err != nil {
		s.failed(r.err)
		return false
	}
	s.renewed(r)
	return false
}

// failed retries a renewal that failed for a passing reason, with backoff.
func (s *keeperState) failed(err error) {
	s.failures++
	s.lastErr = err
	s.log.Warn("renew failed", "key", s.key, "attempt", s.failures, "error", err, "margin", s.t.margin(s.now(), s.validUntil))
	s.fx.renewIn(s.t.Backoff(s.failures))
}

// renewed moves validity on after a good renewal: it counts from the send,
// less any suspend since.
func (s *keeperState) renewed(r result) {
	vu, vs := s.t.ValidUntil(r.sent), r.suspended
	s.slept = 0
	if now := s.clock.Suspended(); now-vs > SuspendTolerance {
		vu, vs, s.slept = s.t.AfterSuspend(vu, now-vs), now, now-vs
	}
	s.failures, s.lastErr, s.lastOK = 0, nil, r.sent
	if vu.After(s.validUntil) {
		s.validUntil, s.validSuspended = vu, vs
	}
	s.fx.termIn(s.until(s.termAt()))
	s.fx.renewIn(s.until(r.sent.Add(s.t.Interval())))
	s.log.Debug("renewed", "key", s.key, "latency", s.now().Sub(r.sent).Round(time.Microsecond), "margin", s.t.margin(s.now(), s.validUntil))
	s.answer(r.sent, nil)
	if s.again && len(s.confirms) > 0 {
		s.send() // sent before a Confirm asked: ask again
	}
	s.again = false
}

// stopped answers the Confirm callers still waiting: the lease is lost,
// or the keeper stops.
func (s *keeperState) stopped() { s.answer(time.Time{}, errStopped) }

// answer gives err to the Confirm callers that a renewal sent at sent
// answers: all of them on an error, else those that asked by then.
func (s *keeperState) answer(sent time.Time, err error) {
	kept := s.confirms[:0]
	for _, c := range s.confirms {
		if err != nil || !sent.Before(c.at) {
			c.ch <- err
		} else {
			kept = append(kept, c)
		}
	}
	s.confirms = kept
}

func (s *keeperState) sendIfIdle() {
	if !s.inflight {
		s.send()
	}
}

// send starts a renewal now, bounded by AttemptTimeout and validUntil.
func (s *keeperState) send() {
	sent, suspended := s.now(), s.clock.Suspended()
	s.inflight = true
	s.fx.renew(sent, suspended, minTime(s.validUntil, sent.Add(s.t.AttemptTimeout())))
}

// checkSuspend corrects validUntil for a suspend since it was reckoned. If
// the lease may have run out meanwhile (its TermAt has passed), it reports
// the loss at once and says so: a renewal that happens to be answered
// first must not hide it. Otherwise a renewal goes out now, to learn the
// truth sooner.
func (s *keeperState) checkSuspend() (lost bool) {
	now := s.clock.Suspended()
	d := now - s.validSuspended
	if d <= SuspendTolerance {
		return false
	}
	s.validUntil, s.validSuspended = s.t.AfterSuspend(s.validUntil, d), now
	s.slept += d
	s.log.Warn("the machine was suspended: the lease ran on meanwhile", "key", s.key, "suspended", d.Round(time.Millisecond), "margin", s.t.margin(s.now(), s.validUntil))
	if !s.now().Before(s.termAt()) {
		s.lose()
		return true
	}
	s.fx.termIn(s.until(s.termAt()))
	s.sendIfIdle()
	return false
}

// lose reports the loss for want of a renewal in time (or because of a
// suspend), with the SIGKILL due at the lease's KillAt.
func (s *keeperState) lose() {
	why := "renewal did not succeed in time"
	switch {
	case s.slept > 0:
		why = fmt.Sprintf("the machine was suspended for %s since the last renewal: the lease may have expired meanwhile", s.slept.Round(time.Millisecond))
	case s.lastErr != nil:
		why = fmt.Sprintf("could not renew for %s (last error: %v)", s.now().Sub(s.lastOK).Round(time.Millisecond), s.lastErr)
	}
	at := s.killAt()
	s.log.Debug("SIGKILL due", "key", s.key, "before_valid_until", s.validUntil.Sub(at).Round(time.Microsecond), "timer_lateness", s.lateNow().Round(time.Microsecond))
	s.fx.report(Loss{Err: errors.New(why), KillAt: at})
}

// margin is what is left of the lease at now, for the log.
func (t Timing) margin(now, validUntil time.Time) any {
	if t.HeldWhileAlive {
		return "unbounded" // the lock is held while distlock lives
	}
	return validUntil.Sub(now).Round(time.Millisecond)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
