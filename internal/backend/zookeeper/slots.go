package zookeeper

import (
	"context"
	"slices"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// InspectSlots implements lock.SlotInspector: every holder in key's line
// (holders), by slot; a mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	if err := lock.ValidateKey(key); err != nil {
		return nil, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	es, ds, err := b.holders(ctx, s, key)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	now := time.Now()
	out := make([]lock.Holder, len(es))
	for i, e := range es {
		out[i] = withSlot(holderOf(key, e, ds[i], now), ds[i])
	}
	slices.SortFunc(out, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return out, nil
}

// withSlot marks a semaphore's holder with its limit and slot.
func withSlot(h lock.Holder, d described) lock.Holder {
	if d.rec.Limit > 1 {
		h.Limit, h.Slot = d.rec.Limit, d.rec.Slot
	}
	return h
}
