package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
)

// keyLockSQL serializes the acquirers of one key for the rest of the
// implicit transaction of their batch, so that a mutex and a semaphore
// acquirer (or two semaphore acquirers) cannot both judge the key by
// snapshots that miss each other's grant. Renewals, releases and breaks
// do not take it: they only shorten or extend existing leases.
const keyLockSQL = "SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 0))"

// holderCols scans the columns of a holder as the queries give them:
// owner, token, host, pid, username, command, note, acquired_at, ttl_ms,
// hold, expires_in_ms.
type holderCols struct {
	owner, host, user, command, note, hold *string
	token, ttlMs, expiresMs                *int64
	pid                                    *int32
	acquiredAt                             *time.Time
}

func (c *holderCols) dest() []any {
	return []any{&c.owner, &c.token, &c.host, &c.pid, &c.user, &c.command, &c.note, &c.acquiredAt, &c.ttlMs, &c.hold, &c.expiresMs}
}

// holder builds the Holder; ok is false when the columns were NULL (no row
// joined).
func (c *holderCols) holder(key string) (lock.Holder, bool) {
	if c.owner == nil || c.token == nil {
		return lock.Holder{}, false
	}
	h := lock.Holder{Key: key, Owner: *c.owner, Token: uint64(*c.token), ExpiresIn: -1}
	h.Meta.Host = deref(c.host)
	h.Meta.User = deref(c.user)
	h.Meta.Command = deref(c.command)
	h.Meta.Note = deref(c.note)
	h.Hold = deref(c.hold)
	if c.pid != nil {
		h.Meta.PID = int(*c.pid)
	}
	if c.acquiredAt != nil {
		h.AcquiredAt = *c.acquiredAt
	}
	if c.ttlMs != nil {
		h.TTL = time.Duration(*c.ttlMs) * time.Millisecond
	}
	if c.expiresMs != nil && *c.expiresMs >= 0 {
		h.ExpiresIn = time.Duration(*c.expiresMs) * time.Millisecond
	}
	return h, true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// hashHex is a short hex digest, for channel names.
func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// Contend implements lock.Backend: waiters take a place in the key's line
// (distlock_waiter, arrival order) and poll, woken by a NOTIFY on every
// release (LISTEN on the key's channel), with the soonest expiry of a live
// lease as the bound for holders that die without releasing. A slot goes
// to the first waiters in line; a try-once gets it only when nobody waits.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &lock.Polling{
		Cap:     pollCap,
		Wake:    func(ctx context.Context) (<-chan struct{}, func(), error) { return b.notify(ctx, req.Key) },
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) { return b.try(ctx, req, false) },
		Queue: &lock.PollQueue{
			Step:  func(ctx context.Context) (lock.Lease, time.Duration, error) { return b.try(ctx, req, true) },
			Leave: func() { b.leaveLine(req) },
		},
	}
}

// pollCap caps a waiter's backoff; a waiter steps (and so refreshes its
// place) at least this often.
const pollCap = time.Second

// placeLasts is how long a waiter's place lasts without a refresh: many
// polls, so that only a waiter that is gone (or cut off) loses it.
const placeLasts = 3 * pollCap

// leaveLine gives our place in the key's line back, on a fresh short
// context; if that fails, the place expires by itself.
func (b *Backend) leaveLine(req lock.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = b.pool.Exec(ctx, leaveLineSQL, b.prefix, req.Key, req.Owner)
}

// try makes one attempt and also reports, when busy, the time left on the
// live lease that expires first (<0 unknown): a semaphore's slot frees
// then even if its holder is not the oldest.
func (b *Backend) try(ctx context.Context, req lock.Request, waiting bool) (lock.Lease, time.Duration, error) {
	limit := max(1, req.Limit)
	var (
		lease   *Lease
		soonest time.Duration
		err     error
	)
	err = b.withSchema(ctx, func() error {
		lease, soonest, err = b.attempt(ctx, req, limit, waiting)
		return err
	})
	if err != nil {
		return nil, soonest, err
	}
	if limit > 1 {
		return &SlotLease{Lease: lease}, -1, nil
	}
	return lease, -1, nil
}

// attempt sends the key lock and acquire.sql as one batch: one round trip,
// one implicit transaction.
func (b *Backend) attempt(ctx context.Context, req lock.Request, limit int, waiting bool) (*Lease, time.Duration, error) {
	granted := time.Now()
	batch := &pgx.Batch{}
	batch.Queue(keyLockSQL, b.prefix, req.Key)
	batch.Queue(acquireSQL, b.prefix, req.Key, req.Owner, req.TTL.Milliseconds(), int64(limit),
		req.Meta.Host, int64(req.Meta.PID), req.Meta.User, req.Meta.Command, req.Meta.Note,
		waiting, placeLasts.Milliseconds())
	br := b.pool.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, -1, b.opError(err)
	}
	var (
		slot, token, have, soonest *int64
		hc                         holderCols
		nextHost                   *string
		nextPID                    *int32
	)
	dest := append([]any{&slot, &token, &have}, hc.dest()...)
	dest = append(dest, &soonest, &nextHost, &nextPID)
	if err := br.QueryRow().Scan(dest...); err != nil {
		return nil, -1, b.opError(err)
	}
	if err := br.Close(); err != nil { // commits
		return nil, -1, b.opError(err)
	}
	switch {
	case slot != nil && token != nil:
		return &Lease{b: b, key: req.Key, owner: req.Owner, token: uint64(*token), ttl: req.TTL,
			granted: granted, slot: int(*slot), limit: limit}, -1, nil
	case have != nil:
		return nil, -1, &lock.LimitMismatchError{Key: req.Key, Want: limit, Have: int(*have)}
	}
	h, ok := hc.holder(req.Key)
	if !ok && nextHost != nil {
		// Free, but others are ahead in line: name the first of them.
		h, ok = lock.Holder{Key: req.Key, ExpiresIn: -1, Meta: lock.Meta{Host: *nextHost}}, true
		if nextPID != nil {
			h.Meta.PID = int(*nextPID)
		}
	}
	if !ok {
		// Every slot looked free but the grant lost a race it cannot lose
		// under the key lock: say so rather than guess.
		return nil, -1, fmt.Errorf("postgres: the acquire statement for %s granted nothing and named no holder", req.Key)
	}
	left := time.Duration(-1)
	if soonest != nil && *soonest >= 0 {
		left = time.Duration(*soonest) * time.Millisecond
	}
	return nil, left, &lock.BusyError{Holder: h}
}

// opError is unavailable, except for a missing table or sequence, which
// withSchema must see as it is. (An ended context stays visible through
// the UnavailableError's chain: errors.Is(err, context.DeadlineExceeded).)
func (b *Backend) opError(err error) error {
	if isUndefined(err) {
		return err // withSchema creates the schema and tries again
	}
	return b.unavailable(err)
}

// QueueLen is how many waiters have a place in key's line, places not yet
// pruned included (for tests and tools).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	var n int64
	err := b.pool.QueryRow(ctx, "SELECT count(*) FROM distlock_waiter WHERE prefix = $1 AND lock_key = $2", b.prefix, key).Scan(&n)
	if isUndefined(err) {
		return 0, nil
	}
	if err != nil {
		return 0, b.unavailable(err)
	}
	return n, nil
}
