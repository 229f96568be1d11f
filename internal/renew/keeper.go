// Package renew is the lease keeper: it renews a lease every TTL/3, tracks
// validUntil from the moment each successful request was sent, and reports
// a Loss early enough for the child to be stopped before anyone else could
// take the lock. No engine call can stall it: requests run on their own
// goroutine and the deadlines run on timers.
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
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Keeper{
		lease: lease, timing: timing, log: log,
		lost: make(chan Loss, 1), poke: make(chan struct{}, 1),
		confirm: make(chan chan<- error),
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
	go k.loop()
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
// is abandoned (its context is cancelled).
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
	sent time.Time
	err  error
}

func (k *Keeper) loop() {
	defer close(k.done)
	t := k.timing
	validUntil := t.ValidUntil(k.lease.Granted())
	next := k.lease.Granted().Add(t.Interval())
	results := make(chan result, 1)
	var (
		inflight context.CancelFunc
		failures int
		lastErr  error
		lastOK   = k.lease.Granted()
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
		if inflight != nil {
			inflight()
		}
		answer(time.Time{}, errStopped) // the lease is lost, or we stop
	}()
	renewTimer := time.NewTimer(time.Until(next))
	termTimer := time.NewTimer(time.Until(t.TermAt(validUntil)))
	defer renewTimer.Stop()
	defer termTimer.Stop()

	send := func() {
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), minTime(validUntil, sent.Add(t.AttemptTimeout())))
		inflight = cancel
		go func() {
			err := k.lease.Renew(ctx)
			results <- result{sent: sent, err: err}
		}()
	}
	for {
		select {
		case <-k.stop:
			return
		case <-k.poke:
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
			if inflight == nil {
				send()
			}
		case r := <-results:
			inflight()
			inflight = nil
			switch {
			case r.err == nil:
				failures, lastErr, lastOK = 0, nil, r.sent
				if vu := t.ValidUntil(r.sent); vu.After(validUntil) {
					validUntil = vu
				}
				termTimer.Reset(time.Until(t.TermAt(validUntil)))
				renewTimer.Reset(time.Until(r.sent.Add(t.Interval())))
				k.log.Debug("renewed", "key", k.lease.Key(), "latency", time.Since(r.sent).Round(time.Microsecond), "margin", time.Until(validUntil).Round(time.Millisecond))
				answer(r.sent, nil)
				if again && len(confirms) > 0 {
					send() // sent before a Confirm asked: ask again
				}
				again = false
			case errors.Is(r.err, lock.ErrNotHeld):
				now := time.Now()
				k.report(Loss{
					Err:    errors.New("the engine says the lease is no longer ours (broken, expired or taken over)"),
					KillAt: minTime(now.Add(t.KillGrace), t.KillAt(validUntil)),
				})
				return
			default:
				failures++
				lastErr = r.err
				k.log.Warn("renew failed", "key", k.lease.Key(), "attempt", failures, "error", r.err, "margin", time.Until(validUntil).Round(time.Millisecond))
				renewTimer.Reset(t.Backoff(failures))
			}
		case <-termTimer.C:
			why := "renewal did not succeed in time"
			if lastErr != nil {
				why = fmt.Sprintf("could not renew for %s (last error: %v)", time.Since(lastOK).Round(time.Millisecond), lastErr)
			}
			k.report(Loss{Err: errors.New(why), KillAt: t.KillAt(validUntil)})
			return
		}
	}
}

func (k *Keeper) report(l Loss) {
	k.log.Warn("lease lost", "key", k.lease.Key(), "reason", l.Err, "kill_in", time.Until(l.KillAt).Round(time.Millisecond))
	k.lost <- l
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
