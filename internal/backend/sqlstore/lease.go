package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// row is the lock.LeaseStore of the SQL engines: our row of
// distlock_lease (key and slot), proven by the owner id (the lease's).
type row struct{ s *Store }

// lease makes the lease of req's row in slot of limit, granted with token
// at granted.
func (s *Store) lease(req lock.Request, token uint64, granted time.Time, slot, limit int) lock.Lease {
	g := lock.Grant{Key: req.Key, Owner: req.Owner, Token: token, TTL: req.TTL, Granted: granted, Slot: slot, Limit: limit}
	return lock.NewLease(g, row{s})
}

// exec runs an owner-checked update or delete: one matched row means ours.
func (r row) exec(ctx context.Context, query string, args ...any) error {
	n, err := r.s.d.Driver.Exec(ctx, query, args...)
	if r.s.undefined(err) {
		return lock.ErrNotHeld // the table was dropped: so was our row
	}
	if err != nil {
		return r.s.Unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nil
}

// Renew implements lock.LeaseStore: an owner-checked update of a live row.
func (r row) Renew(ctx context.Context, l *lock.Held) error {
	return r.exec(ctx, r.s.d.SQL.Renew, l.TTL().Milliseconds(), r.s.d.Prefix, l.Key(), int64(l.Slot()), l.Owner())
}

// Release implements lock.LeaseStore: an owner-checked delete that wakes
// the waiters (on an engine that can). A row that had expired is not held.
func (r row) Release(ctx context.Context, l *lock.Held) error {
	return r.exec(ctx, r.s.d.SQL.Release, r.s.wakeArgs(l.Key(), r.s.d.Prefix, l.Key(), int64(l.Slot()), l.Owner())...)
}

// Hold implements lock.LeaseStore: an owner-checked update to d from now,
// marked with mode so status can say why nobody renews it.
func (r row) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	ms := max(d.Milliseconds(), 1)
	return d, r.exec(ctx, r.s.d.SQL.Hold, ms, ms, mode, r.s.d.Prefix, l.Key(), int64(l.Slot()), l.Owner())
}

// Resume implements lock.Backend: the row must still be live and name h's
// owner and token. With no table yet, nothing is held.
func (s *Store) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	var slot, limit, ttlMs int64
	err := s.queryRow(ctx, s.d.SQL.Resume, []any{s.d.Prefix, h.Key, h.Owner, int64(h.Token)}, &slot, &limit, &ttlMs)
	if errors.Is(err, errNoRows) || s.undefined(err) {
		return nil, lock.ErrNotHeld
	}
	if err != nil {
		return nil, s.Unavailable(err)
	}
	req := lock.Request{Key: h.Key, Owner: h.Owner, TTL: time.Duration(ttlMs) * time.Millisecond}
	return s.lease(req, h.Token, granted, int(slot), int(limit)), nil
}
