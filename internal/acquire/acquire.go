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
	return acquire(ctx, b, req, opts, realTimer, rand.Float64)
}

// acquire is Acquire with its clock and its randomness given: timer starts
// a timer of d (stop stops it), rnd draws the jitter in [0, 1).
func acquire(ctx context.Context, b lock.Backend, req lock.Request, opts Options,
	timer func(d time.Duration) (c <-chan time.Time, stop func()), rnd func() float64) (lock.Lease, error) {
	wctx := ctx
	if opts.Wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, opts.Wait)
		defer cancel()
	}
	w := &waiter{
		ctx: ctx, wctx: wctx, c: b.Contend(req), key: req.Key, opts: opts,
		timer: timer, rnd: rnd, delay: minPoll,
	}
	for {
		if l, done, err := w.step(); done {
			return l, err
		}
	}
}

func realTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// waiter is one wait between its steps: what the engine last answered and
// how long the next pause is.
type waiter struct {
	ctx, wctx context.Context // the caller's; the wait's, with its deadline
	c         lock.Contender
	key       string
	opts      Options
	timer     func(time.Duration) (<-chan time.Time, func())
	rnd       func() float64

	last      *lock.Holder // the holder last reported to Progress
	seen      lock.Holder  // the holder of the last busy answer
	delay     time.Duration
	contacted bool // the engine has answered (busy) at least once
	failures  int  // transient errors in a row while waiting
}

// step tries once and, if the key is busy, waits for the next try. done
// says the wait is over, with the lease or the error.
func (w *waiter) step() (l lock.Lease, done bool, err error) {
	l, err = w.c.Try(w.wctx)
	if err == nil {
		return l, true, nil
	}
	var busy *lock.BusyError
	if !errors.As(err, &busy) {
		done, err = w.onError(err)
		return nil, done, err
	}
	done, err = w.onBusy(busy)
	return nil, done, err
}

// onError follows an error that is not a busy answer: ridden out (the wait
// goes on), or the end of the wait.
func (w *waiter) onError(err error) (done bool, end error) {
	if w.rideOut(err) {
		return false, nil
	}
	return true, w.fail(err)
}

// onBusy follows a busy answer: the end of a try-once, else Wait, report
// progress and pause until the next try.
func (w *waiter) onBusy(busy *lock.BusyError) (done bool, err error) {
	w.contacted, w.failures, w.seen = true, 0, busy.Holder
	if w.opts.Wait == 0 {
		w.c.Leave()
		return true, busy
	}
	r, err := w.c.Wait(w.wctx)
	if err != nil {
		return w.onError(err)
	}
	// Told after Wait, so that a waiter reported as waiting holds its
	// place in the engine's line (if it keeps one).
	w.progress(busy.Holder)
	return w.pause(r)
}

// progress tells Progress of h if it is not the holder last told of.
func (w *waiter) progress(h lock.Holder) {
	if w.last != nil && lock.SameHolder(*w.last, h) {
		return
	}
	w.last = &h
	if w.opts.Progress != nil {
		w.opts.Progress(h)
	}
}

// pause waits as r says (a wake-up, or the backoff) before the next try;
// the wait's end ends it.
func (w *waiter) pause(r lock.Retry) (done bool, err error) {
	var timer <-chan time.Time
	if d := Sleep(r, w.delay, w.rnd()); d >= 0 {
		c, stop := w.timer(d)
		defer stop()
		timer = c
	}
	select {
	case <-r.Wake:
		w.delay = minPoll
	case <-timer:
		w.delay = min(2*w.delay, max(r.Poll, minPoll))
	case <-w.wctx.Done():
		w.c.Leave()
		return true, endOfWait(w.ctx, w.wctx, w.key, &w.seen, w.wctx.Err())
	}
	return false, nil
}

// rideOut sleeps before trying again after a transient error while
// waiting, and reports false when the wait must end with err instead.
func (w *waiter) rideOut(err error) bool {
	if !w.contacted || w.opts.Wait == 0 || !lock.Transient(err) || over(w.wctx) {
		return false
	}
	w.failures++
	d := jitter(min(minRetry<<min(w.failures-1, 8), maxRetry), w.rnd())
	if w.opts.Retrying != nil {
		w.opts.Retrying(err, w.failures, d)
	}
	c, stop := w.timer(d)
	defer stop()
	select {
	case <-c:
		return true
	case <-w.wctx.Done():
		return false
	}
}

// fail ends the wait after an error that is not a busy answer.
func (w *waiter) fail(err error) error {
	w.c.Leave()
	if w.failures > 0 && !over(w.ctx) {
		return err // the engine was failing when the wait ran out
	}
	if w.contacted {
		return endOfWait(w.ctx, w.wctx, w.key, &w.seen, err)
	}
	return endOfWait(w.ctx, w.wctx, w.key, nil, err)
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
