package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Inspect implements lock.Backend: the oldest live lease of key (for a
// semaphore, the holder with the lowest token).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	var (
		k           string
		hr          holderRow
		limit, slot int
	)
	err := b.db.QueryRowContext(ctx, inspectSQL, b.prefix, key).Scan(append(append([]any{&k}, hr.dest()...), &limit, &slot)...)
	if errors.Is(err, sql.ErrNoRows) || isUndefined(err) {
		return lock.Holder{}, false, nil
	}
	if err != nil {
		return lock.Holder{}, false, b.unavailable(err)
	}
	h, ok := hr.holder(key)
	return withSlot(h, limit, slot), ok, nil
}

// List implements lock.Backend: one row per held key, its oldest live lease.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	rows, err := b.db.QueryContext(ctx, listSQL, b.prefix, likePrefix(keyPrefix))
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
		if len(out) > 0 && out[len(out)-1].Key == k {
			continue // a semaphore's younger holder: the oldest describes it
		}
		if h, ok := hr.holder(k); ok && lock.ValidateKey(k) == nil {
			out = append(out, withSlot(h, limit, slot))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, b.unavailable(err)
	}
	lock.SortHolders(out)
	return out, nil
}

// likePrefix is a LIKE pattern (escape character '!') matching what
// starts with p.
func likePrefix(p string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return r.Replace(p) + "%"
}

// Break implements lock.Backend: with token != 0 it deletes the live lease
// with that token (a semaphore's other holders stay), else every lease of
// key; it returns the holder broken (the oldest, when several were).
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	var (
		broken lock.Holder
		n      int
	)
	err := b.multi(ctx, breakSQL, []any{b.prefix, key, token}, func(rows *sql.Rows) error {
		var (
			k  string
			hr holderRow
		)
		if err := rows.Scan(append([]any{&k}, hr.dest()...)...); err != nil {
			return err
		}
		if h, ok := hr.holder(key); ok && n == 0 {
			broken = h
		}
		n++
		return nil
	})
	if isUndefined(err) {
		return lock.Holder{}, lock.ErrNotHeld
	}
	if err != nil {
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
	var us int64
	err = b.db.QueryRowContext(ctx, "SELECT expires_us - "+nowUS+" FROM distlock_lease WHERE prefix = ? AND lock_key = ? AND token = ?",
		b.prefix, key, token).Scan(&us)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, b.unavailable(err)
	}
	return time.Duration(us) * time.Microsecond, true, nil
}
