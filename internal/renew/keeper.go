// Package renew is the lease keeper: it renews a lease every TTL/3, tracks
// validUntil from the moment each successful request was sent, and reports
// a Loss early enough for the child to be stopped before anyone else could
// take the lock. No engine call can stall it: requests run on their own
// goroutine and the deadlines run on timers. The timers run on the
// monotonic clock, which stops while the machine is suspended; the keeper
// checks a clock that does not (see Clock) and counts a suspend against
// the lease.
package renew

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Loss says the lease is (or is about to be) gone and when the child's
// group must be dead at the latest.
type Loss struct {
	Err    error     // why, one line, for the user
	KillAt time.Time // SIGKILL the group at this moment
}

// Keeper renews one lease until stopped or lost.
type Keeper struct {
	lease  lock.Lease
	timing Timing
	clock  Clock
	log    *slog.Logger

	lost    chan Loss
	poke    chan struct{}
	confirm chan chan<- error
	stop    chan struct{}
	done    chan struct{}
}

// Start begins renewing lease; its first validity is counted from
// lease.Granted(). log may be nil.
func Start(lease lock.Lease, timing Timing, log *slog.Logger) *Keeper {
	return start(lease, timing, log, SystemClock)
}

func start(lease lock.Lease, timing Timing, log *slog.Logger, clock Clock) *Keeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Keeper{
		lease: lease, timing: timing, clock: clock, log: log,
		lost: make(chan Loss, 1), poke: make(chan struct{}, 1),
		confirm: make(chan chan<- error),
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
	// The suspended time at the start anchors the first validity (counted
	// from lease.Granted(), a moment ago).
	go k.loop(clock.Suspended())
	return k
}

// Lost delivers at most one Loss.
func (k *Keeper) Lost() <-chan Loss { return k.lost }

// Poke asks for a renewal now (used when a break may have happened).
func (k *Keeper) Poke() {
	select {
	case k.poke <- struct{}{}:
	default:
	}
}

// errStopped answers a Confirm once the keeper has stopped.
var errStopped = errors.New("the lease keeper has stopped")

// Confirm renews now and returns a channel that yields nil once a renewal
// sent after this call has succeeded, or an error once the lease is lost
// (the Loss is also delivered on Lost) or the keeper has stopped. A
// renewal that fails for a passing reason is retried as usual; Confirm
// waits for its outcome. Used after distlock was stopped (Ctrl-Z): its
// command is continued only once the lease is known to be still ours.
func (k *Keeper) Confirm() <-chan error {
	ch := make(chan error, 1)
	select {
	case k.confirm <- ch:
	case <-k.done:
		ch <- errStopped
	}
	return ch
}

// Stop ends renewing and waits for the loop to finish. A request in flight
// is cancelled, and Stop waits for it to return, so that once Stop returns
// nothing reads the lease any more (the caller may change it: Hold).
func (k *Keeper) Stop() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
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

func (k *Keeper) loop(suspendedAtStart time.Duration) {
	defer close(k.done)
	t := k.timing
	// validUntil is on the monotonic clock, corrected for every suspend up
	// to validSuspended (a reading of k.clock).
	validUntil := t.ValidUntil(k.lease.Granted())
	validSuspended := suspendedAtStart
	next := k.lease.Granted().Add(t.Interval())
	results := make(chan result, 1)
	var (
		inflight context.CancelFunc
		failures int
		lastErr  error
		lastOK   = k.lease.Granted()
		slept    time.Duration // suspended since the last good renewal was sent
		// Confirm callers, each answered by the first renewal sent after
		// it asked; again: one asked while a renewal was in flight.
		confirms []confirmReq
		again    bool
	)
	answer := func(sent time.Time, err error) {
		kept := confirms[:0]
		for _, c := range confirms {
			if err != nil || !sent.Before(c.at) {
				c.ch <- err
			} else {
				kept = append(kept, c)
			}
		}
		confirms = kept
	}
	defer func() {
		// Cancel a request in flight and wait for it to return: after
		// Stop nothing may touch the lease.
		if inflight != nil {
			inflight()
			<-results
		}
		answer(time.Time{}, errStopped) // the lease is lost, or we stop
	}()
	renewTimer := time.NewTimer(time.Until(next))
	termTimer := time.NewTimer(time.Until(t.TermAt(validUntil)))
	suspendTicker := time.NewTicker(t.SuspendCheck())
	defer renewTimer.Stop()
	defer termTimer.Stop()
	defer suspendTicker.Stop()

	send := func() {
		sent, suspended := time.Now(), k.clock.Suspended()
		ctx, cancel := context.WithDeadline(context.Background(), minTime(validUntil, sent.Add(t.AttemptTimeout())))
		inflight = cancel
		go func() {
			err := k.lease.Renew(ctx)
			results <- result{sent: sent, suspended: suspended, err: err}
		}()
	}
	alerts := k.lease.Alerts()
	// lose reports the loss for want of a renewal in time (or because of a
	// suspend), with the SIGKILL due at the lease's KillAt.
	lose := func() {
		why := "renewal did not succeed in time"
		switch {
		case slept > 0:
			why = fmt.Sprintf("the machine was suspended for %s since the last renewal: the lease may have expired meanwhile", slept.Round(time.Millisecond))
		case lastErr != nil:
			why = fmt.Sprintf("could not renew for %s (last error: %v)", time.Since(lastOK).Round(time.Millisecond), lastErr)
		}
		k.report(Loss{Err: errors.New(why), KillAt: t.KillAt(validUntil)})
	}
	// checkSuspend corrects validUntil for a suspend since it was
	// reckoned. If the lease may have run out meanwhile (its TermAt has
	// passed), it reports the loss at once and says so: a renewal that
	// happens to be answered first must not hide it. Otherwise a renewal
	// goes out now, to learn the truth sooner.
	checkSuspend := func() (lost bool) {
		now := k.clock.Suspended()
		d := now - validSuspended
		if d <= SuspendTolerance {
			return false
		}
		validUntil, validSuspended = t.AfterSuspend(validUntil, d), now
		slept += d
		k.log.Warn("the machine was suspended: the lease ran on meanwhile", "key", k.lease.Key(), "suspended", d.Round(time.Millisecond), "margin", t.margin(validUntil))
		if !time.Now().Before(t.TermAt(validUntil)) {
			lose()
			return true
		}
		termTimer.Reset(time.Until(t.TermAt(validUntil)))
		if inflight == nil {
			send()
		}
		return false
	}
	for {
		select {
		case <-k.stop:
			return
		case <-suspendTicker.C:
			if checkSuspend() {
				return
			}
		case <-k.poke:
			if checkSuspend() {
				return
			}
			if inflight == nil {
				send()
			}
		case <-alerts:
			// The engine heard the lease may be gone (a local break):
			// find out now rather than at the next renewal.
			if inflight == nil {
				send()
			}
		case ch := <-k.confirm:
			confirms = append(confirms, confirmReq{at: time.Now(), ch: ch})
			if inflight == nil {
				send()
			} else {
				again = true
			}
		case <-renewTimer.C:
			if checkSuspend() {
				return
			}
			if inflight == nil {
				send()
			}
		case r := <-results:
			inflight()
			inflight = nil
			if errors.Is(r.err, lock.ErrNotHeld) {
				// Another holder may be running already: stop the
				// command now, not at the end of kill-grace.
				k.report(Loss{
					Err:    errors.New("the engine says the lease is no longer ours (broken, expired or taken over)"),
					KillAt: t.LostKillAt(time.Now(), validUntil),
				})
				return
			}
			if checkSuspend() {
				return
			}
			if r.err != nil {
				failures++
				lastErr = r.err
				k.log.Warn("renew failed", "key", k.lease.Key(), "attempt", failures, "error", r.err, "margin", t.margin(validUntil))
				renewTimer.Reset(t.Backoff(failures))
				continue
			}
			// Validity counts from the send, less any suspend since.
			vu, vs := t.ValidUntil(r.sent), r.suspended
			slept = 0
			if now := k.clock.Suspended(); now-vs > SuspendTolerance {
				vu, vs, slept = t.AfterSuspend(vu, now-vs), now, now-vs
			}
			failures, lastErr, lastOK = 0, nil, r.sent
			if vu.After(validUntil) {
				validUntil, validSuspended = vu, vs
			}
			termTimer.Reset(time.Until(t.TermAt(validUntil)))
			renewTimer.Reset(time.Until(r.sent.Add(t.Interval())))
			k.log.Debug("renewed", "key", k.lease.Key(), "latency", time.Since(r.sent).Round(time.Microsecond), "margin", t.margin(validUntil))
			answer(r.sent, nil)
			if again && len(confirms) > 0 {
				send() // sent before a Confirm asked: ask again
			}
			again = false
		case <-termTimer.C:
			if checkSuspend() {
				return
			}
			if time.Now().Before(t.TermAt(validUntil)) {
				termTimer.Reset(time.Until(t.TermAt(validUntil)))
				continue
			}
			lose()
			return
		}
	}
}

func (k *Keeper) report(l Loss) {
	k.log.Warn("lease lost", "key", k.lease.Key(), "reason", l.Err, "kill_in", time.Until(l.KillAt).Round(time.Millisecond))
	k.lost <- l
}

// margin is what is left of the lease, for the log.
func (t Timing) margin(validUntil time.Time) any {
	if t.HeldWhileAlive {
		return "unbounded" // the lock is held while distlock lives
	}
	return time.Until(validUntil).Round(time.Millisecond)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
