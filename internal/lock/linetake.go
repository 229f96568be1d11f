package lock

import (
	"context"
	"errors"
	"time"
)

// confirmPause is the pause between TakeRenewed's renewals after one
// failed.
const confirmPause = 20 * time.Millisecond

// TakeRenewed is a LineStore's Take for a waiter whose place lives only
// while it is renewed (a PlaceKeeper: an etcd lease, a Consul session):
// renew, one renewal of the place (its Keeper), goes out alongside take,
// the engine's taking request, so that the lease taken counts from just
// before both (granted). When the take succeeded but that renewal failed,
// how long the place lives is not known: it renews again, confirmPause
// after each failure, until a renewal answers (the lease then counts from
// just before it) or ctx ends (the last renewal's error: the caller still
// holds what it took, and its Leave gives it up). ErrNotHeld when a
// renewal says the place is gone, whatever the take answered: what it
// took, if anything, went with the place. Otherwise take's own error.
//
// Each renewal is given up ttl after it went out (a paused engine, a
// connection that dropped its traffic): an answer later than that would
// count the lease from more than ttl ago, over before it arrived. A
// renewal given up is a failure like any other: the next one may answer.
// The take does not answer before one does, even when ctx has no end: an
// error would leave the caller holding, unknown to it, what it took (a
// Consul waiter's next look finds its own entry holding the slot, and
// cannot take it).
func TakeRenewed(ctx context.Context, ttl time.Duration, renew, take func(context.Context) error) (granted time.Time, err error) {
	renewOnce := func() error {
		rctx, cancel := context.WithTimeout(ctx, ttl)
		defer cancel()
		return renew(rctx)
	}
	granted = time.Now()
	renewed := make(chan error, 1)
	go func() { renewed <- renewOnce() }()
	err = take(ctx)
	rerr := <-renewed
	for err == nil && rerr != nil && !errors.Is(rerr, ErrNotHeld) {
		select {
		case <-ctx.Done():
			return granted, rerr
		case <-time.After(confirmPause):
		}
		granted = time.Now()
		rerr = renewOnce()
	}
	if errors.Is(rerr, ErrNotHeld) {
		return granted, rerr
	}
	return granted, err
}
