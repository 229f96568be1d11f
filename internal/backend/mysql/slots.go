package mysql

import (
	"context"

	"github.com/distlock/distlock/internal/lock"
)

// InspectSlots implements lock.SlotInspector in one query: every live
// lease of key, by slot.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	rows, err := b.db.QueryContext(ctx, slotsSQL, b.prefix, key)
	if isUndefined(err) {
		return nil, nil
	}
	if err != nil {
		return nil, b.unavailable(err)
	}
	defer rows.Close()
	var out []lock.Holder
	for rows.Next() {
		var (
			k           string
			hr          holderRow
			limit, slot int
		)
		if err := rows.Scan(append(append([]any{&k}, hr.dest()...), &limit, &slot)...); err != nil {
			return nil, b.unavailable(err)
		}
		if h, ok := hr.holder(key); ok {
			out = append(out, withSlot(h, limit, slot))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, b.unavailable(err)
	}
	return out, nil
}

// withSlot marks a semaphore's holder with its limit and slot.
func withSlot(h lock.Holder, limit, slot int) lock.Holder {
	if limit > 1 {
		h.Limit, h.Slot = limit, slot
	}
	return h
}
