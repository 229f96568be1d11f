package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
)

// Lease is our row of distlock_lease, proven by the owner id.
type Lease struct {
	b       *Backend
	key     string
	owner   string
	token   uint64
	ttl     time.Duration
	granted time.Time
	slot    int
	limit   int
}

var (
	_ lock.Lease = (*Lease)(nil)
)

func (l *Lease) Key() string        { return l.key }
func (l *Lease) Token() uint64      { return l.token }
func (l *Lease) Owner() string      { return l.owner }
func (l *Lease) Granted() time.Time { return l.granted }

// Alerts implements lock.Lease: the database sends no news; renewals find out.
func (l *Lease) Alerts() <-chan struct{} { return nil }

// Renew implements lock.Lease: an owner-checked update of a live row.
func (l *Lease) Renew(ctx context.Context) error {
	tag, err := l.b.pool.Exec(ctx, renewSQL, l.b.prefix, l.key, int64(l.slot), l.owner, l.ttl.Milliseconds())
	if isUndefined(err) {
		return lock.ErrNotHeld // the table was dropped: so was our row
	}
	if err != nil {
		return l.b.unavailable(err)
	}
	if tag.RowsAffected() != 1 {
		return lock.ErrNotHeld
	}
	return nil
}

// Release implements lock.Lease: an owner-checked delete that wakes the
// waiters. A row that had expired is deleted too, and reported not held.
func (l *Lease) Release(ctx context.Context) error {
	var live bool
	var notified any
	err := l.b.pool.QueryRow(ctx, releaseSQL, l.b.prefix, l.key, int64(l.slot), l.owner, l.b.channel(l.key)).Scan(&live, &notified)
	if errors.Is(err, pgx.ErrNoRows) || isUndefined(err) {
		return lock.ErrNotHeld
	}
	if err != nil {
		return l.b.unavailable(err)
	}
	if !live {
		return lock.ErrNotHeld
	}
	return nil
}

// Hold implements lock.Lease: an owner-checked update to d from now,
// marked with mode so status can say why nobody renews it.
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	ms := max(d.Milliseconds(), 1)
	tag, err := l.b.pool.Exec(ctx, holdSQL, l.b.prefix, l.key, int64(l.slot), l.owner, ms, mode)
	if isUndefined(err) {
		return lock.ErrNotHeld
	}
	if err != nil {
		return l.b.unavailable(err)
	}
	if tag.RowsAffected() != 1 {
		return lock.ErrNotHeld
	}
	l.ttl = d
	return nil
}

// Handle implements lock.Lease.
func (l *Lease) Handle() lock.Handle {
	return lock.Handle{Key: l.key, Owner: l.owner, Token: l.token, TTLms: l.ttl.Milliseconds()}
}

// SlotLease is a held slot of a semaphore (Request.Limit > 1).
type SlotLease struct{ *Lease }

var _ lock.Slotted = (*SlotLease)(nil)

// Slot implements lock.Slotted.
func (s *SlotLease) Slot() int { return s.slot }

// Resume implements lock.Backend: the row must still be live and name h's
// owner and token.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	var slot, limit, ttlMs int64
	err := b.withSchema(ctx, func() error {
		return b.pool.QueryRow(ctx, resumeSQL, b.prefix, h.Key, h.Owner, int64(h.Token)).Scan(&slot, &limit, &ttlMs)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, lock.ErrNotHeld
	}
	if err != nil {
		return nil, b.unavailable(err)
	}
	l := &Lease{b: b, key: h.Key, owner: h.Owner, token: h.Token, ttl: time.Duration(ttlMs) * time.Millisecond,
		granted: granted, slot: int(slot), limit: int(limit)}
	if limit > 1 {
		return &SlotLease{Lease: l}, nil
	}
	return l, nil
}
