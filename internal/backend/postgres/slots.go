package postgres

import (
	"context"

	"github.com/distlock/distlock/internal/lock"
)

// slotsSQL is every live lease of a key, by slot: a mutex's one, or each
// held slot of a semaphore. $1 prefix, $2 key.
const slotsSQL = `SELECT lock_key, owner, token, host, pid, username, command, note, acquired_at, ttl_ms, hold,
       (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint,
       lock_limit, slot
FROM distlock_lease
WHERE prefix = $1 AND lock_key = $2 AND expires_at > clock_timestamp()
ORDER BY slot`

// InspectSlots implements lock.SlotInspector in one query.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	rows, err := b.pool.Query(ctx, slotsSQL, b.prefix, key)
	if err != nil {
		if isUndefined(err) {
			return nil, nil
		}
		return nil, b.unavailable(err)
	}
	defer rows.Close()
	var out []lock.Holder
	for rows.Next() {
		var (
			k           string
			hc          holderCols
			limit, slot int32
		)
		if err := rows.Scan(append(append([]any{&k}, hc.dest()...), &limit, &slot)...); err != nil {
			return nil, b.unavailable(err)
		}
		if h, ok := hc.holder(key); ok {
			out = append(out, withSlot(h, limit, slot))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, b.unavailable(err)
	}
	return out, nil
}

// withSlot marks a semaphore's holder with its limit and slot.
func withSlot(h lock.Holder, limit, slot int32) lock.Holder {
	if limit > 1 {
		h.Limit, h.Slot = int(limit), int(slot)
	}
	return h
}
