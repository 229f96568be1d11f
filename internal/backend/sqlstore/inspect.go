package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// List implements lock.Backend: one row per held key, its oldest live lease.
func (s *Store) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	hs, err := s.holders(ctx, s.d.SQL.List, s.d.Prefix, keyPrefix)
	if err != nil {
		return nil, err
	}
	return lock.ListOldest(keyPrefix, hs), nil
}

// Inspect implements lock.Backend: the oldest live lease of key (for a
// semaphore, the holder with the lowest token); with no table yet, free.
func (s *Store) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	return lock.InspectOldest(ctx, key, s.InspectSlots)
}

// InspectSlots implements lock.SlotInspector in one query: every live
// lease of key, by slot.
func (s *Store) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	leases, err := s.holders(ctx, s.d.SQL.Leases, s.d.Prefix, key)
	slices.SortStableFunc(leases, func(a, b lock.Holder) int { return cmp.Compare(a.Slot, b.Slot) })
	return leases, err
}

// holders runs a query of slot rows (Leases, List, Break): the holders its
// rows name, with their limit and slot on a semaphore; with no table yet
// there are none.
func (s *Store) holders(ctx context.Context, query string, args ...any) ([]lock.Holder, error) {
	var out []lock.Holder
	err := s.d.Driver.Query(ctx, query, args, func(scan Row) error {
		var r slotRow
		if err := scan(r.dest()...); err != nil {
			return err
		}
		if h, ok := r.holder(r.key); ok {
			out = append(out, h)
		}
		return nil
	})
	return out, s.unlessUndefined(err)
}

// Break implements lock.Backend: with token != 0 it deletes the live lease
// with that token (a semaphore's other holders stay), else every lease of
// key; it returns the holder broken (the oldest, when several were), and
// wakes the waiters (on an engine that can). Queries.Break deletes no live
// lease it does not give back: a break reports every holder it broke, and
// breaks none that an acquirer granted while it ran unless it reports it.
func (s *Store) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	broken, err := s.holders(ctx, s.d.SQL.Break, s.wakeArgs(key, s.d.Prefix, key, int64(token))...)
	if err != nil {
		return lock.Holder{}, err
	}
	var left []lock.Holder // only read when nothing was broken
	if len(broken) == 0 {
		if left, err = s.InspectSlots(ctx, key); err != nil {
			return lock.Holder{}, err
		}
	}
	return lock.BreakAnswer(key, broken, left)
}

// LeaseLeft is the time left on key's lease with token by the database's
// clock, negative once it has expired (found is false when the row is
// gone). For tests and tools: status and list never show expired leases.
func (s *Store) LeaseLeft(ctx context.Context, key string, token uint64) (left time.Duration, found bool, err error) {
	var us int64
	err = s.queryRow(ctx, s.d.SQL.LeaseLeft, []any{s.d.Prefix, key, int64(token)}, &us)
	if errors.Is(err, errNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.Unavailable(err)
	}
	return time.Duration(us) * time.Microsecond, true, nil
}
