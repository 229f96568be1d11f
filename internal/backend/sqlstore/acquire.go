package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Contend implements lock.Backend: waiters take a place in the key's line
// (distlock_waiter, arrival order) and poll, woken by the Dialect's Wake
// when it has one, never past the soonest expiry of a live lease (the
// bound for holders that die without releasing). A slot goes to the first
// waiters in line; a try-once gets it only when nobody waits.
func (s *Store) Contend(req lock.Request) lock.Contender {
	p := &lock.Polling{
		Cap:     s.d.PollCap,
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) { return s.try(ctx, req, false) },
		Queue: &lock.PollQueue{
			Step:  func(ctx context.Context) (lock.Lease, time.Duration, error) { return s.try(ctx, req, true) },
			Leave: func() { s.leaveLine(req) },
		},
	}
	if s.d.Wake != nil {
		p.Wake = func(ctx context.Context) (<-chan struct{}, func(), error) { return s.d.Wake(ctx, req.Key) }
	}
	return p
}

// leaveLine gives our place in the key's line back, on a fresh short
// context; if that fails, the place expires by itself.
func (s *Store) leaveLine(req lock.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = s.d.Driver.Exec(ctx, s.d.SQL.Leave, s.d.Prefix, req.Key, req.Owner)
}

// try makes one attempt, Queries.Acquire: one round trip, one
// transaction (with the schema created first if it is missing). It also
// reports, when busy, the time left on the live lease that expires first
// (<0 unknown): a semaphore's slot frees then even if its holder is not
// the oldest.
func (s *Store) try(ctx context.Context, req lock.Request, waiting bool) (lock.Lease, time.Duration, error) {
	limit := max(1, req.Limit)
	granted := time.Now()
	args := []any{s.d.Prefix, req.Key, req.Owner, req.TTL.Milliseconds(), int64(limit),
		req.Meta.Host, int64(req.Meta.PID), req.Meta.User, req.Meta.Command, req.Meta.Note,
		waiting, s.d.PlaceLasts.Milliseconds()}
	var (
		r attemptRow
		n int
	)
	err := s.withSchema(ctx, func() error {
		n = 0
		return s.d.Driver.Acquire(ctx, s.d.SQL.Acquire, args, func(scan Row) error {
			n++
			return scan(r.dest()...)
		})
	})
	if err != nil {
		return nil, -1, s.Unavailable(err) // a table still missing once created too
	}
	if n != 1 {
		return nil, -1, fmt.Errorf("%s: the acquire statement gave %d result rows, want 1", s.d.Name, n)
	}
	if r.slot.Valid && r.token.Valid {
		return s.lease(req, uint64(r.token.Int64), granted, int(r.slot.Int64), limit), -1, nil
	}
	left, err := r.busy(s.d.Name, req.Key, limit)
	return nil, left, err
}

// attemptRow is the one row of Queries.Acquire.
type attemptRow struct {
	slot, token, have, soonest sql.NullInt64
	hr                         holderRow
	nextHost                   sql.NullString
	nextPID                    sql.NullInt64
}

func (r *attemptRow) dest() []any {
	dest := append([]any{&r.slot, &r.token, &r.have}, r.hr.dest()...)
	return append(dest, &r.soonest, &r.nextHost, &r.nextPID)
}

// busy is why the attempt granted nothing, and the time left on the live
// lease that expires first (<0 unknown).
func (r *attemptRow) busy(engine, key string, limit int) (time.Duration, error) {
	if r.have.Valid {
		return -1, &lock.LimitMismatchError{Key: key, Want: limit, Have: int(r.have.Int64)}
	}
	h, ok := r.hr.holder(key)
	if !ok && r.nextHost.Valid {
		// Free, but others are ahead in line: name the first of them.
		h, ok = lock.Holder{Key: key, ExpiresIn: -1, Meta: lock.Meta{Host: r.nextHost.String, PID: int(r.nextPID.Int64)}}, true
	}
	if !ok {
		// Every slot looked free but the grant lost a race it cannot lose
		// in its serialized transaction: say so rather than guess.
		return -1, fmt.Errorf("%s: the acquire statement for %s granted nothing and named no holder", engine, key)
	}
	left := time.Duration(-1)
	if r.soonest.Valid && r.soonest.Int64 >= 0 {
		left = time.Duration(r.soonest.Int64) * time.Millisecond
	}
	return left, &lock.BusyError{Holder: h}
}

// QueueLen implements lock.LineCounter (status's waiting): how many
// waiters have a place in key's line, places not yet pruned included.
func (s *Store) QueueLen(ctx context.Context, key string) (int64, error) {
	var n int64
	err := s.queryRow(ctx, s.d.SQL.QueueLen, []any{s.d.Prefix, key}, &n)
	return n, s.unlessUndefined(err)
}
