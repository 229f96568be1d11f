package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.LeaseStore: an owner-checked PEXPIRE to d, marked
// with mode so status can say why nobody renews it.
func (s mutexStore) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	return d, s.b.held(s.b.run(ctx, l.TTL(), holdScript(), []string{s.b.lockKey(l.Key())}, l.Owner(), max(d.Milliseconds(), 1), mode))
}

// Resume implements lock.Backend: the lock hash must still name h's owner
// and token.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	vals, err := b.c.HMGet(ctx, b.lockKey(h.Key), "owner", "token", "ttl_ms").Result()
	if err != nil {
		return nil, b.unavailable(err)
	}
	owner, _ := vals[0].(string)
	token, _ := vals[1].(string)
	if owner != h.Owner || token != strconv.FormatUint(h.Token, 10) {
		return nil, lock.ErrNotHeld
	}
	ttl := h.TTL()
	if s, ok := vals[2].(string); ok {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			ttl = time.Duration(ms) * time.Millisecond
		}
	}
	return b.lease(lock.Request{Key: h.Key, Owner: h.Owner, TTL: ttl}, h.Token, granted), nil
}
