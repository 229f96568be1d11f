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
}

// Forever is the Wait value for --wait forever.
const Forever = time.Duration(-1)

// minPoll is where the jittered backoff starts after a wake-up: a short
// job ends soon.
const minPoll = 20 * time.Millisecond

// Acquire takes the lock per opts. When the key stays busy it returns a
// *lock.BusyError naming the last holder seen; when ctx is cancelled it
// returns an error wrapping ctx's.
func Acquire(ctx context.Context, b lock.Backend, req lock.Request, opts Options) (lock.Lease, error) {
	wctx := ctx
	if opts.Wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, opts.Wait)
		defer cancel()
	}
	c := b.Contend(req)
	var last *lock.Holder
	delay := minPoll
	for {
		l, err := c.Try(wctx)
		if err == nil {
			return l, nil
		}
		var busy *lock.BusyError
		if !errors.As(err, &busy) {
			c.Leave()
			return nil, endOfWait(ctx, wctx, req.Key, last, err)
		}
		if opts.Wait == 0 {
			c.Leave()
			return nil, busy
		}
		r, err := c.Wait(wctx)
		if err != nil {
			c.Leave()
			return nil, endOfWait(ctx, wctx, req.Key, &busy.Holder, err)
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
			return nil, endOfWait(ctx, wctx, req.Key, last, wctx.Err())
		}
		if t != nil {
			t.Stop()
		}
	}
}

// Sleep is how long to wait before the next try (<0: until woken): the
// jittered backoff around delay (±25%) when the engine asks for polling,
// but no later than r.After.
func Sleep(r lock.Retry, delay time.Duration, rnd float64) time.Duration {
	d := r.After
	if r.Poll > 0 {
		p := time.Duration(float64(min(delay, r.Poll)) * (0.75 + 0.5*rnd))
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
