package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// holderRow scans the columns of a holder as the queries give them (see
// holderCols): owner, token, host, pid, username, command, note,
// acquired_us, ttl_ms, hold, expires_in_ms.
type holderRow struct {
	owner, host, user, command, note, hold sql.NullString
	token                                  sql.NullInt64
	pid                                    sql.NullInt64
	acquiredUS, ttlMs, expiresMs           sql.NullInt64
}

func (r *holderRow) dest() []any {
	return []any{&r.owner, &r.token, &r.host, &r.pid, &r.user, &r.command, &r.note, &r.acquiredUS, &r.ttlMs, &r.hold, &r.expiresMs}
}

// holder builds the Holder; ok is false when the columns were NULL.
func (r *holderRow) holder(key string) (lock.Holder, bool) {
	if !r.owner.Valid || !r.token.Valid {
		return lock.Holder{}, false
	}
	h := lock.Holder{Key: key, Owner: r.owner.String, Token: uint64(r.token.Int64), ExpiresIn: -1, Hold: r.hold.String,
		Meta: lock.Meta{Host: r.host.String, PID: int(r.pid.Int64), User: r.user.String, Command: r.command.String, Note: r.note.String}}
	if r.acquiredUS.Valid {
		h.AcquiredAt = time.UnixMicro(r.acquiredUS.Int64)
	}
	if r.ttlMs.Valid {
		h.TTL = time.Duration(r.ttlMs.Int64) * time.Millisecond
	}
	if r.expiresMs.Valid && r.expiresMs.Int64 >= 0 {
		h.ExpiresIn = time.Duration(r.expiresMs.Int64) * time.Millisecond
	}
	return h, true
}

// Contend implements lock.Backend: waiters poll (MySQL has no notifications), never past the soonest
// expiry of a live lease. Waiters are not queued in
// arrival order: the quickest after a release takes the lock.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &lock.Polling{
		Cap:     pollCap,
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) { return b.try(ctx, req) },
	}
}

// try makes one attempt and also reports, when busy, the time left on the
// live lease that expires first (<0 unknown).
func (b *Backend) try(ctx context.Context, req lock.Request) (lock.Lease, time.Duration, error) {
	limit := max(1, req.Limit)
	var (
		l       *Lease
		soonest time.Duration
		err     error
	)
	err = b.withSchema(ctx, func() error {
		l, soonest, err = b.attempt(ctx, req, limit)
		return err
	})
	if err != nil {
		var busy *lock.BusyError
		var mm *lock.LimitMismatchError
		if errors.As(err, &busy) || errors.As(err, &mm) {
			return nil, soonest, err
		}
		return nil, -1, b.unavailable(err)
	}
	if limit > 1 {
		return &SlotLease{Lease: l}, -1, nil
	}
	return l, -1, nil
}

func (b *Backend) attempt(ctx context.Context, req lock.Request, limit int) (*Lease, time.Duration, error) {
	granted := time.Now()
	var (
		have, slot, token, soonest sql.NullInt64
		hr                         holderRow
		n                          int
	)
	err := b.multi(ctx, acquireSQL, []any{
		b.prefix, req.Key, req.Owner, req.TTL.Milliseconds(), int64(limit),
		req.Meta.Host, int64(req.Meta.PID), req.Meta.User, req.Meta.Command, req.Meta.Note,
	}, func(rows *sql.Rows) error {
		n++
		dest := append([]any{&have, &slot, &token}, hr.dest()...)
		return rows.Scan(append(dest, &soonest)...)
	})
	if err != nil {
		return nil, -1, err
	}
	if n != 1 {
		return nil, -1, fmt.Errorf("mysql: the acquire query gave %d result rows, want 1", n)
	}
	switch {
	case slot.Valid && token.Valid:
		return &Lease{b: b, key: req.Key, owner: req.Owner, token: uint64(token.Int64), ttl: req.TTL,
			granted: granted, slot: int(slot.Int64), limit: limit}, -1, nil
	case have.Valid:
		return nil, -1, &lock.LimitMismatchError{Key: req.Key, Want: limit, Have: int(have.Int64)}
	}
	h, ok := hr.holder(req.Key)
	if !ok {
		return nil, -1, fmt.Errorf("mysql: the acquire query for %s granted nothing and named no holder", req.Key)
	}
	left := time.Duration(-1)
	if soonest.Valid && soonest.Int64 >= 0 {
		left = time.Duration(soonest.Int64) * time.Millisecond
	}
	return nil, left, &lock.BusyError{Holder: h}
}

// pollCap caps a waiter's backoff (MySQL has no notifications).
const pollCap = 250 * time.Millisecond
