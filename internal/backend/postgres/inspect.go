package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
)

// Inspect implements lock.Backend: the oldest live lease of key (for a
// semaphore, the holder with the lowest token).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	var (
		k           string
		hc          holderCols
		limit, slot int32
	)
	err := b.pool.QueryRow(ctx, inspectSQL, b.prefix, key).Scan(append(append([]any{&k}, hc.dest()...), &limit, &slot)...)
	if errors.Is(err, pgx.ErrNoRows) || isUndefined(err) {
		return lock.Holder{}, false, nil // no row, or no table yet: free
	}
	if err != nil {
		return lock.Holder{}, false, b.unavailable(err)
	}
	h, ok := hc.holder(key)
	return withSlot(h, limit, slot), ok, nil
}

// List implements lock.Backend: one row per held key, its oldest live lease.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	rows, err := b.pool.Query(ctx, listSQL, b.prefix, keyPrefix)
	if err != nil {
		if isUndefined(err) {
			return nil, nil
		}
		return nil, b.unavailable(err)
	}
	var out []lock.Holder
	for rows.Next() {
		var (
			k           string
			hc          holderCols
			limit, slot int32
		)
		if err := rows.Scan(append(append([]any{&k}, hc.dest()...), &limit, &slot)...); err != nil {
			rows.Close()
			return nil, b.unavailable(err)
		}
		if h, ok := hc.holder(k); ok && lock.ValidateKey(k) == nil {
			out = append(out, withSlot(h, limit, slot))
		}
	}
	if err := rows.Err(); err != nil {
		if isUndefined(err) {
			return nil, nil
		}
		return nil, b.unavailable(err)
	}
	lock.SortHolders(out)
	return out, nil
}

// Break implements lock.Backend: with token != 0 it deletes the live lease
// with that token (a semaphore's other holders stay), else every lease of
// key; it returns the holder broken (the oldest, when several were), and
// wakes the waiters.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	rows, err := b.pool.Query(ctx, breakSQL, b.prefix, key, int64(token), b.channel(key))
	if err != nil {
		if isUndefined(err) {
			return lock.Holder{}, lock.ErrNotHeld
		}
		return lock.Holder{}, b.unavailable(err)
	}
	var (
		broken lock.Holder
		n      int
	)
	for rows.Next() {
		var (
			k        string
			hc       holderCols
			notified any
		)
		if err := rows.Scan(append(append([]any{&k}, hc.dest()...), &notified)...); err != nil {
			rows.Close()
			return lock.Holder{}, b.unavailable(err)
		}
		if h, ok := hc.holder(key); ok && n == 0 {
			broken = h
		}
		n++
	}
	if err := rows.Err(); err != nil {
		if isUndefined(err) {
			return lock.Holder{}, lock.ErrNotHeld
		}
		return lock.Holder{}, b.unavailable(err)
	}
	if n > 0 {
		return broken, nil
	}
	h, held, err := b.Inspect(ctx, key)
	if err != nil {
		return lock.Holder{}, err
	}
	if !held {
		return lock.Holder{}, lock.ErrNotHeld
	}
	return h, &lock.BusyError{Holder: h}
}

// LeaseLeft is the time left on key's lease with token by the database's
// clock, negative once it has expired (found is false when the row is
// gone). For tests and tools: status and list never show expired leases.
func (b *Backend) LeaseLeft(ctx context.Context, key string, token uint64) (left time.Duration, found bool, err error) {
	var ms int64
	err = b.pool.QueryRow(ctx, "SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint FROM distlock_lease WHERE prefix = $1 AND lock_key = $2 AND token = $3",
		b.prefix, key, int64(token)).Scan(&ms)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, b.unavailable(err)
	}
	return time.Duration(ms) * time.Microsecond, true, nil
}
