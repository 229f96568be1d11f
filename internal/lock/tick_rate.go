package lock

import (
	"context"
	"time"
)

// Rate measurement of an engine's whole-second counter (a lease's seconds
// left, counted by the server's monotonic clock): the moment it ticks is
// bracketed by WaitTick; two ticks seconds apart give the server clock's
// rate against ours, to within the width of the brackets over the time
// between them.
const (
	rateStep = 2 * time.Second // of the server's clock between ticks
	// rateSpan bounds the server seconds from the first tick to the one
	// before the last wait; that wait aims just before a tick by our
	// clock, so a fast server clock can make it end on the next one (and
	// a process stalled for a second or more, later still).
	rateSpan = 6
)

// TickRate is how much faster the server's clock ran than ours between
// two ticks a and b of a counter that moves one per server second, and
// the uncertainty of that.
func TickRate(a, b Tick) (fast, uncertainty float64) {
	server := float64(max(a.V-b.V, b.V-a.V)) * float64(time.Second)
	longest := float64(b.Hi.Sub(a.Lo))
	shortest := float64(b.Lo.Sub(a.Hi))
	hiFast := server/max(shortest, 1) - 1
	loFast := server/longest - 1
	return (hiFast + loFast) / 2, (hiFast - loFast) / 2
}

// MeasureTickRate measures the rate of a counter that moves by step (+1 or
// −1) each server second (read reads it): the first tick is awaited from
// firstAt, later ones rateStep apart, until the rate is known to within a
// quarter of ClockDrift or rateSpan server seconds have passed (see
// rateSpan). seconds is how many server seconds the measurement spanned.
func MeasureTickRate(ctx context.Context, firstAt time.Time, step int64, read func(context.Context) (int64, error)) (fast, uncertainty float64, seconds int64, err error) {
	next := func(at time.Time) (Tick, error) {
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return Tick{}, ctx.Err()
		}
		return WaitTick(ctx, 2*time.Second, 0, step, read)
	}
	first, err := next(firstAt)
	if err != nil {
		return 0, 0, 0, err
	}
	for n := time.Duration(1); seconds < rateSpan; n++ {
		last, err := next(first.Mid().Add(n*rateStep - 100*time.Millisecond))
		if err != nil {
			return 0, 0, 0, err
		}
		seconds = (last.V - first.V) * step
		if fast, uncertainty = TickRate(first, last); uncertainty <= ClockDrift/4 {
			break
		}
	}
	return fast, uncertainty, seconds, nil
}
