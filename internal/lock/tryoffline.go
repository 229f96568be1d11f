package lock

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// TryOffLine is the loop of an OnceTaker's TryOnce whose place stands off
// the line (an etcd lease with no waiter key): the store, its place made,
// looks and takes as a waiter does, but behind every waiter in line (busy
// while as many wait as places are free). On ErrLookAgain (a conflict) it
// looks again after a random pause under 5 ms, so that racing acquirers
// spread out, until ctx ends (then ctx.Err()). On any answer but the lease
// it leaves, so that whatever a lost reply took goes with the place.
func TryOffLine(ctx context.Context, s LineStore) (Lease, error) {
	for {
		look, err := s.Look(ctx)
		var l Lease
		if err == nil && look.Ahead >= look.Free {
			err = &BusyError{Holder: look.Holder}
		}
		if err == nil {
			l, err = s.Take(ctx)
		}
		if errors.Is(err, ErrLookAgain) {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(time.Duration(rand.Int64N(int64(5 * time.Millisecond)))):
				continue
			}
		}
		if err != nil {
			s.Leave()
		}
		return l, err
	}
}
