// Package acquire is the wait policy: try once, or keep trying until a
// deadline, woken by the engine's notifications (pub/sub, watch) with a
// jittered poll as the fallback, or queue in order where the engine can.
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
	// Progress is called with the holder each time an attempt finds the key
	// busy (and by queueing engines when the holder changes). May be nil.
	Progress func(lock.Holder)
}

// Forever is the Wait value for --wait forever.
const Forever = time.Duration(-1)

// Poll bounds: the fallback poll starts fast (a short job ends soon) and
// backs off, never sleeping past the holder's expiry.
const (
	minPoll = 20 * time.Millisecond
	// maxPoll is the cap with notifications (polling is only a fallback);
	// maxPollBlind the cap without (a local file engine: polls are cheap).
	maxPoll      = time.Second
	maxPollBlind = 200 * time.Millisecond
)

// Acquire takes the lock per opts. When the key stays busy it returns a
// *lock.BusyError naming the last holder seen; when ctx is cancelled it
// returns ctx's error.
func Acquire(ctx context.Context, b lock.Backend, req lock.Request, opts Options) (lock.Lease, error) {
	if opts.Wait == 0 {
		return b.TryAcquire(ctx, req)
	}
	wctx := ctx
	if opts.Wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, opts.Wait)
		defer cancel()
	}
	if q, ok := b.(lock.Queuer); ok {
		l, err := q.Acquire(wctx, req, opts.Progress)
		return l, timeoutAsBusy(ctx, b, req.Key, err)
	}
	return poll(ctx, wctx, b, req, opts.Progress)
}

func poll(ctx, wctx context.Context, b lock.Backend, req lock.Request, progress func(lock.Holder)) (lock.Lease, error) {
	var wake <-chan struct{}
	limit := maxPollBlind
	if n, ok := b.(lock.Notifier); ok {
		// Subscribe before the first try, so a release between the try and
		// the wait is not missed. Without it we still poll.
		if ch, stop, err := n.Notify(wctx, req.Key); err == nil {
			wake, limit = ch, maxPoll
			defer stop()
		}
	}
	delay := minPoll
	var busy *lock.BusyError
	for {
		l, err := b.TryAcquire(wctx, req)
		if err == nil {
			return l, nil
		}
		if !errors.As(err, &busy) {
			return nil, timeoutAsBusyErr(ctx, busy, err)
		}
		if progress != nil {
			progress(busy.Holder)
		}
		t := time.NewTimer(NextPoll(delay, busy.Holder.ExpiresIn, rand.Float64()))
		select {
		case <-wake:
			delay = minPoll
		case <-t.C:
			delay = min(delay*2, limit)
		case <-wctx.Done():
			t.Stop()
			return nil, timeoutAsBusyErr(ctx, busy, wctx.Err())
		}
		t.Stop()
	}
}

// NextPoll is the jittered fallback delay: around delay (±25%), but no
// later than just after the holder's lease expires (expiresIn < 0: unknown).
func NextPoll(delay, expiresIn time.Duration, r float64) time.Duration {
	d := time.Duration(float64(delay) * (0.75 + 0.5*r))
	if expiresIn >= 0 && expiresIn+5*time.Millisecond < d {
		d = expiresIn + 5*time.Millisecond
	}
	return max(d, time.Millisecond)
}

// timeoutAsBusyErr turns the end of --wait into the busy error users expect;
// a cancelled parent context stays an error of its own.
func timeoutAsBusyErr(ctx context.Context, busy *lock.BusyError, err error) error {
	if busy != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return busy
	}
	return err
}

// timeoutAsBusy is timeoutAsBusyErr for queueing engines, which report the
// end of the wait as a context error: look up the holder to name it.
func timeoutAsBusy(ctx context.Context, b lock.Backend, key string, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	h, ok, ierr := b.Inspect(ictx, key)
	if ierr != nil || !ok {
		h = lock.Holder{Key: key, ExpiresIn: -1}
	}
	return &lock.BusyError{Holder: h}
}
