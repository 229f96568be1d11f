package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Queuer = (*Backend)(nil)

// Poll bounds of a wait: the fallback poll starts fast and backs off; with
// notifications it is only a fallback.
const (
	minPoll      = 20 * time.Millisecond
	maxPoll      = time.Second            // while LISTEN works
	maxPollBlind = 200 * time.Millisecond // when it could not be set up
)

// Acquire implements lock.Queuer, so that a wait ends the way the other
// engines' do (a passed deadline is busy, naming the last holder seen,
// even when it passes during an attempt): try; when busy, LISTEN on the
// key's channel and look again at once (a release may have come before
// the LISTEN took effect); then wait for a notification, the soonest
// expiry of a live lease, or a jittered, backing-off poll, until ctx ends.
// Waiters are not queued in arrival order: a release wakes every waiter
// and the quickest takes the lock. progress (may be nil) is called
// whenever the holder changes.
func (b *Backend) Acquire(ctx context.Context, req lock.Request, progress func(lock.Holder)) (lock.Lease, error) {
	var (
		last      *lock.Holder
		wake      <-chan struct{}
		listening bool // tried to LISTEN (wake is nil if that failed)
		stop      func()
		delay     = minPoll
		limit     = maxPollBlind
	)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		l, soonest, err := b.try(ctx, req)
		if err == nil {
			return l, nil
		}
		var busy *lock.BusyError
		if !errors.As(err, &busy) {
			return nil, lock.EndOfWait(ctx, req.Key, last, err)
		}
		if last == nil || !sameHolder(*last, busy.Holder) {
			h := busy.Holder
			last = &h
			if progress != nil {
				progress(h)
			}
		}
		if !listening {
			listening = true
			ch, s, err := b.Notify(ctx, req.Key)
			if err == nil {
				wake, stop, limit = ch, s, maxPoll
				continue // look again: a release may have come before LISTEN
			}
			if ctx.Err() != nil {
				return nil, lock.EndOfWait(ctx, req.Key, last, ctx.Err())
			}
			// No notifications (the LISTEN connection failed): poll.
		}
		t := time.NewTimer(nextPoll(delay, soonest, rand.Float64()))
		select {
		case <-wake:
			delay = minPoll
		case <-t.C:
			delay = min(2*delay, limit)
		case <-ctx.Done():
			t.Stop()
			return nil, lock.EndOfWait(ctx, req.Key, last, ctx.Err())
		}
		t.Stop()
	}
}

// nextPoll is the fallback delay: around delay (±25%), but no later than
// just after the soonest expiry of a live lease (soonest < 0: unknown). It
// mirrors acquire.NextPoll, which an engine should not import.
func nextPoll(delay, soonest time.Duration, r float64) time.Duration {
	d := time.Duration(float64(delay) * (0.75 + 0.5*r))
	if soonest >= 0 && soonest+5*time.Millisecond < d {
		d = soonest + 5*time.Millisecond
	}
	return max(d, time.Millisecond)
}

// sameHolder: the same holder as last reported (for progress).
func sameHolder(a, b lock.Holder) bool {
	return a.Owner == b.Owner && a.Token == b.Token && a.Meta.Host == b.Meta.Host && a.Meta.PID == b.Meta.PID
}
