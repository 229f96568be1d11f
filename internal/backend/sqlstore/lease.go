package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Lease is our row of distlock_lease, proven by the owner id.
type Lease struct {
	s       *Store
	key     string
	owner   string
	token   uint64
	ttl     time.Duration
	granted time.Time
	slot    int
	limit   int
}

var _ lock.Lease = (*Lease)(nil)

func (l *Lease) Key() string        { return l.key }
func (l *Lease) Token() uint64      { return l.token }
func (l *Lease) Owner() string      { return l.owner }
func (l *Lease) Granted() time.Time { return l.granted }

// Alerts implements lock.Lease: the database sends no news; renewals find out.
func (l *Lease) Alerts() <-chan struct{} { return nil }

// exec runs an owner-checked update or delete: one matched row means ours.
func (l *Lease) exec(ctx context.Context, query string, args ...any) error {
	n, err := l.s.d.Driver.Exec(ctx, query, args...)
	if l.s.d.Driver.IsUndefined(err) {
		return lock.ErrNotHeld // the table was dropped: so was our row
	}
	if err != nil {
		return l.s.unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nil
}

// Renew implements lock.Lease: an owner-checked update of a live row.
func (l *Lease) Renew(ctx context.Context) error {
	return l.exec(ctx, l.s.d.SQL.Renew, l.ttl.Milliseconds(), l.s.d.Prefix, l.key, int64(l.slot), l.owner)
}

// Release implements lock.Lease: an owner-checked delete that wakes the
// waiters (on an engine that can). A row that had expired is not held.
func (l *Lease) Release(ctx context.Context) error {
	return l.exec(ctx, l.s.d.SQL.Release, l.s.wakeArgs(l.key, l.s.d.Prefix, l.key, int64(l.slot), l.owner)...)
}

// Hold implements lock.Lease: an owner-checked update to d from now,
// marked with mode so status can say why nobody renews it.
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	ms := max(d.Milliseconds(), 1)
	if err := l.exec(ctx, l.s.d.SQL.Hold, ms, ms, mode, l.s.d.Prefix, l.key, int64(l.slot), l.owner); err != nil {
		return err
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

// leased is l as the lock.Lease it is: a SlotLease for a semaphore.
func leased(l *Lease) lock.Lease {
	if l.limit > 1 {
		return &SlotLease{Lease: l}
	}
	return l
}

// Resume implements lock.Backend: the row must still be live and name h's
// owner and token. With no table yet, nothing is held.
func (s *Store) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	var slot, limit, ttlMs int64
	err := s.queryRow(ctx, s.d.SQL.Resume, []any{s.d.Prefix, h.Key, h.Owner, int64(h.Token)}, &slot, &limit, &ttlMs)
	if errors.Is(err, errNoRows) || s.d.Driver.IsUndefined(err) {
		return nil, lock.ErrNotHeld
	}
	if err != nil {
		return nil, s.unavailable(err)
	}
	return leased(&Lease{s: s, key: h.Key, owner: h.Owner, token: h.Token, ttl: time.Duration(ttlMs) * time.Millisecond,
		granted: granted, slot: int(slot), limit: int(limit)}), nil
}
