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

// Contend implements lock.Backend: waiters take a place in the key's line
// (distlock_waiter, arrival order) and poll (MySQL has no notifications),
// never past the soonest expiry of a live lease. A slot goes to the first
// waiters in line; a try-once gets it only when nobody waits.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &lock.Polling{
		Cap:     pollCap,
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) { return b.try(ctx, req, false) },
		Queue: &lock.PollQueue{
			Step:  func(ctx context.Context) (lock.Lease, time.Duration, error) { return b.try(ctx, req, true) },
			Leave: func() { b.leaveLine(req) },
		},
	}
}

// leaveLine gives our place in the key's line back, on a fresh short
// context; if that fails, the place expires by itself.
func (b *Backend) leaveLine(req lock.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = b.db.ExecContext(ctx, leaveLineSQL, b.prefix, req.Key, req.Owner)
}

// try makes one attempt and also reports, when busy, the time left on the
// live lease that expires first (<0 unknown).
func (b *Backend) try(ctx context.Context, req lock.Request, waiting bool) (lock.Lease, time.Duration, error) {
	limit := max(1, req.Limit)
	var (
		l       *Lease
		soonest time.Duration
		err     error
	)
	err = b.withSchema(ctx, func() error {
		l, soonest, err = b.attempt(ctx, req, limit, waiting)
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

func (b *Backend) attempt(ctx context.Context, req lock.Request, limit int, waiting bool) (*Lease, time.Duration, error) {
	granted := time.Now()
	var (
		have, slot, token, soonest sql.NullInt64
		hr                         holderRow
		nextHost                   sql.NullString
		nextPID                    sql.NullInt64
		n                          int
	)
	w := 0
	if waiting {
		w = 1
	}
	err := b.multi(ctx, acquireSQL, []any{
		b.prefix, req.Key, req.Owner, req.TTL.Milliseconds(), int64(limit), w, placeLasts.Milliseconds(),
		req.Meta.Host, int64(req.Meta.PID), req.Meta.User, req.Meta.Command, req.Meta.Note,
	}, func(rows *sql.Rows) error {
		n++
		dest := append([]any{&have, &slot, &token}, hr.dest()...)
		return rows.Scan(append(dest, &soonest, &nextHost, &nextPID)...)
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
	if !ok && nextHost.Valid {
		// Free, but others are ahead in line: name the first of them.
		h, ok = lock.Holder{Key: req.Key, ExpiresIn: -1, Meta: lock.Meta{Host: nextHost.String, PID: int(nextPID.Int64)}}, true
	}
	if !ok {
		return nil, -1, fmt.Errorf("mysql: the acquire query for %s granted nothing and named no holder", req.Key)
	}
	left := time.Duration(-1)
	if soonest.Valid && soonest.Int64 >= 0 {
		left = time.Duration(soonest.Int64) * time.Millisecond
	}
	return nil, left, &lock.BusyError{Holder: h}
}

// pollCap caps a waiter's backoff (MySQL has no notifications); a waiter
// steps (and so refreshes its place) at least this often.
const pollCap = 250 * time.Millisecond

// placeLasts is how long a waiter's place lasts without a refresh: many
// polls, so that only a waiter that is gone (or cut off) loses it.
const placeLasts = 2 * time.Second

// QueueLen is how many waiters have a place in key's line, places not yet
// pruned included (for tests and tools).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	var n int64
	err := b.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM distlock_waiter WHERE prefix = ? AND lock_key = ?", b.prefix, key).Scan(&n)
	if isUndefined(err) {
		return 0, nil
	}
	if err != nil {
		return 0, b.unavailable(err)
	}
	return n, nil
}
