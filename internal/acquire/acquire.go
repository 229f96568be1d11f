// Package acquire is the wait policy, the one wait loop of distlock: try
// once, or keep trying until a deadline. Engines supply a lock.Contender
// ("try once" and "when to try again": a queue's wake-up, a published
// release, a holder's expiry); the loop owns the backoff, its jitter,
// progress reports, the deadline and the end-of-wait rule. See
// docs/ARCHITECTURE.md ("Waiting").
package acquire

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Options say how long to wait and whom to tell about it.
type Options struct {
	// Wait is how long to keep trying: 0 tries once, Forever never gives up.
	Wait time.Duration
	// Progress is called with the holder when a busy attempt finds a
	// holder other than the last one reported, once the contender holds
	// its place in the engine's line (if it keeps one). May be nil.
	Progress func(lock.Holder)
	// Retrying is called when a wait rides out a transient engine error
	// (a reset connection, a timeout, a failover) and tries again after
	// next; attempt counts from 1. May be nil.
	Retrying func(err error, attempt int, next time.Duration)
}

// Forever is the Wait value for --wait forever.
const Forever = time.Duration(-1)

// minPoll is where the jittered backoff starts after a wake-up: a short
// job ends soon.
const minPoll = 20 * time.Millisecond

// Backoff after a transient engine error while waiting: 100ms doubling,
// at most 2s, jittered like the poll.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 2 * time.Second
)

// Acquire takes the lock per opts. When the key stays busy it returns a
// *lock.BusyError naming the last holder seen; when ctx is cancelled it
// returns an error wrapping ctx's.
//
// Once the engine has answered (a busy answer), a transient error while
// waiting (lock.Transient) does not end the wait: it is retried with
// backoff until the deadline. An error before the first answer ends it at
// once (the engine is unreachable: exit 69). A wait whose deadline passes
// while the engine is failing ends with that error, not busy: the lock
// was not seen held, the engine was not seen at all.
func Acquire(ctx context.Context, b lock.Backend, req lock.Request, opts Options) (lock.Lease, error) {
	wctx := ctx
	if opts.Wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, opts.Wait)
		defer cancel()
	}
	c := b.Contend(req)
	var (
		last      *lock.Holder // the holder last reported to Progress
		seen      lock.Holder  // the holder of the last busy answer
		delay     = minPoll
		contacted bool // the engine has answered (busy) at least once
		failures  int  // transient errors in a row while waiting
	)
	// rideOut sleeps before trying again after a transient error while
	// waiting, and reports false when the wait must end with err instead.
	rideOut := func(err error) bool {
		if !contacted || opts.Wait == 0 || !lock.Transient(err) || over(wctx) {
			return false
		}
		failures++
		d := jitter(min(minRetry<<min(failures-1, 8), maxRetry), rand.Float64())
		if opts.Retrying != nil {
			opts.Retrying(err, failures, d)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-wctx.Done():
			return false
		}
	}
	// fail ends the wait after an error that is not a busy answer.
	fail := func(err error) error {
		c.Leave()
		if failures > 0 && !over(ctx) {
			return err // the engine was failing when the wait ran out
		}
		if contacted {
			return endOfWait(ctx, wctx, req.Key, &seen, err)
		}
		return endOfWait(ctx, wctx, req.Key, nil, err)
	}
	for {
		l, err := c.Try(wctx)
		if err == nil {
			return l, nil
		}
		var busy *lock.BusyError
		if !errors.As(err, &busy) {
			if rideOut(err) {
				continue
			}
			return nil, fail(err)
		}
		contacted, failures, seen = true, 0, busy.Holder
		if opts.Wait == 0 {
			c.Leave()
			return nil, busy
		}
		r, err := c.Wait(wctx)
		if err != nil {
			if rideOut(err) {
				continue
			}
			return nil, fail(err)
		}
		// Told after Wait, so that a waiter reported as waiting holds its
		// place in the engine's line (if it keeps one).
		if last == nil || !lock.SameHolder(*last, busy.Holder) {
			h := busy.Holder
			last = &h
			if opts.Progress != nil {
				opts.Progress(h)
			}
		}
		var (
			t     *time.Timer
			timer <-chan time.Time
		)
		if d := Sleep(r, delay, rand.Float64()); d >= 0 {
			t = time.NewTimer(d)
			timer = t.C
		}
		select {
		case <-r.Wake:
			delay = minPoll
		case <-timer:
			delay = min(2*delay, max(r.Poll, minPoll))
		case <-wctx.Done():
			c.Leave()
			return nil, endOfWait(ctx, wctx, req.Key, &seen, wctx.Err())
		}
		if t != nil {
			t.Stop()
		}
	}
}

// over reports whether ctx has ended or its deadline has passed (an
// engine client may notice the deadline a moment before ctx says so).
func over(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(dl)
}

// jitter spreads d by ±25%.
func jitter(d time.Duration, rnd float64) time.Duration {
	return time.Duration(float64(d) * (0.75 + 0.5*rnd))
}

// Sleep is how long to wait before the next try (<0: until woken): the
// jittered backoff around delay (±25%) when the engine asks for polling,
// but no later than r.After.
func Sleep(r lock.Retry, delay time.Duration, rnd float64) time.Duration {
	d := r.After
	if r.Poll > 0 {
		p := jitter(min(delay, r.Poll), rnd)
		if d < 0 || p < d {
			d = p
		}
	}
	if d < 0 {
		return -1
	}
	return max(d, time.Millisecond)
}

// endOfWait is the end-of-wait rule: the wait's own deadline passing is
// "busy" (naming the last holder seen), the caller's cancellation is its
// own error, anything else is the engine's error. The engine client may
// report the deadline (as a socket timeout, say) a moment before the
// context itself says so: a passed deadline counts.
func endOfWait(parent, wctx context.Context, key string, last *lock.Holder, err error) error {
	if parent.Err() != nil {
		return lock.EndOfWait(parent, key, last, err)
	}
	return lock.EndOfWait(wctx, key, last, err)
}
