package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.Lease: an owner-checked PEXPIRE to d, marked
// with mode so status can say why nobody renews it.
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	cmd, nr := l.b.run(ctx, l.ttl, holdScript(), []string{l.b.lockKey(l.key)}, l.owner, max(d.Milliseconds(), 1), mode)
	n, err := cmd.Int()
	if err != nil {
		return l.b.unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	if nr != nil {
		return &lock.UnavailableError{Msg: nr.Error() + ": the hold may not survive a failover", Err: nr}
	}
	l.ttl = d
	return nil
}

// Handle implements lock.Lease.
func (l *Lease) Handle() lock.Handle {
	return lock.Handle{Key: l.key, Owner: l.owner, Token: l.token, TTLms: l.ttl.Milliseconds()}
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
	return &Lease{b: b, key: h.Key, owner: h.Owner, token: h.Token, ttl: ttl, granted: granted}, nil
}
