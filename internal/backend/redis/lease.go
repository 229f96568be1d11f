package redis

import (
	"cmp"
	"context"
	"strconv"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// slotStore is the lock.LeaseStore of a slot of a lock of limit N (a
// mutex: the one slot, the lock hash): our ownership of the slot, proven
// by the owner id (the lease's).
type slotStore struct{ b *Backend }

// lease makes the lease of req's slot, granted with token at granted.
func (b *Backend) lease(req lock.Request, token uint64, slot int, granted time.Time) lock.Lease {
	g := lock.Grant{Key: req.Key, Owner: req.Owner, Token: token, TTL: req.TTL, Granted: granted}
	if req.Limit > 1 {
		g.Slot, g.Limit = slot, req.Limit
	}
	return lock.NewLease(g, slotStore{b})
}

// slotKey is slot i of key's lock of limit n: a mutex's is the lock hash
// (slots_lib.lua).
func (b *Backend) slotKey(key string, i, n int) string {
	if n <= 1 {
		return b.lockKey(key)
	}
	return b.lockKey(key) + ":slot:" + strconv.Itoa(i)
}

// slotKeys is the lock hash, then extra, then the n slot hashes of key.
func (b *Backend) slotKeys(key string, n int, extra ...string) []string {
	keys := append([]string{b.lockKey(key)}, extra...)
	for i := range max(n, 1) {
		keys = append(keys, b.slotKey(key, i, n))
	}
	return keys
}

// limitOf is a lease's limit as the scripts take it (a mutex's is 1).
func limitOf(l *lock.Held) int { return max(l.Limit(), 1) }

// Renew implements lock.LeaseStore; it returns the client's own error,
// unwrapped, for the renewer's warnings.
func (s slotStore) Renew(ctx context.Context, l *lock.Held) error {
	cmd, nr := s.b.run(ctx, l.TTL(), renewScript(), s.b.slotKeys(l.Key(), limitOf(l)), l.Owner(), l.TTL().Milliseconds(), l.Slot(), limitOf(l))
	switch n, err := cmd.Int(); {
	case err != nil:
		return err
	case n != 1:
		return lock.ErrNotHeld
	}
	return nr // a renewal too few replicas have is a failed renewal
}

// Release implements lock.LeaseStore.
func (s slotStore) Release(ctx context.Context, l *lock.Held) error {
	return s.b.release(ctx, l.Key(), l.Owner(), l.Slot(), limitOf(l), s.b.channel(l.Key()))
}

// Hold implements lock.LeaseStore: an owner-checked PEXPIRE of our slot to
// d, marked with mode so status can say why nobody renews it.
func (s slotStore) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	cmd, nr := s.b.run(ctx, l.TTL(), holdScript(), s.b.slotKeys(l.Key(), limitOf(l)), l.Owner(), max(d.Milliseconds(), 1), mode, l.Slot(), limitOf(l))
	if err := s.b.owned(cmd.Int()); err != nil {
		return d, err
	}
	if nr != nil {
		return d, &lock.UnavailableError{Msg: nr.Error() + ": the hold may not survive a failover", Err: nr}
	}
	return d, nil
}

// release frees owner's slot of key's lock of limit n and publishes on
// channel ("" publishes nothing).
func (b *Backend) release(ctx context.Context, key, owner string, slot, n int, channel string) error {
	return b.owned(releaseScript().Run(ctx, b.c, b.slotKeys(key, n), owner, slot, n, channel).Int())
}

// owned reads the reply of an owner-checked change: 1 when it was ours.
func (b *Backend) owned(n int, err error) error {
	if err != nil {
		return b.unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nil
}

// Resume implements lock.Backend: the lock hash must still name h's owner
// and token (a handle names a mutex).
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	rec, err := b.holding(ctx, h)
	if err != nil {
		return nil, err
	}
	ttl := cmp.Or(rec.TTL, h.TTL()) // the record's: a hold may have changed it
	return b.lease(lock.Request{Key: h.Key, Owner: h.Owner, TTL: ttl}, h.Token, 0, granted), nil
}

// holding is h's record on b: ErrNotHeld unless it names h's owner and
// token.
func (b *Backend) holding(ctx context.Context, h lock.Handle) (lock.Holder, error) {
	rec, held, err := b.Inspect(ctx, h.Key)
	if err == nil && (!held || rec.Owner != h.Owner || rec.Token != h.Token) {
		err = lock.ErrNotHeld
	}
	return rec, err
}
