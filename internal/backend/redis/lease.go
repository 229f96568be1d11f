package redis

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Lease is our ownership of the lock hash, proven by the owner id.
type Lease struct {
	b       *Backend
	key     string
	owner   string
	token   uint64
	ttl     time.Duration
	granted time.Time
}

func (l *Lease) Key() string        { return l.key }
func (l *Lease) Token() uint64      { return l.token }
func (l *Lease) Owner() string      { return l.owner }
func (l *Lease) Granted() time.Time { return l.granted }

// Alerts implements lock.Lease: Redis sends no news; renewals find out.
func (l *Lease) Alerts() <-chan struct{} { return nil }

// Renew implements lock.Lease.
func (l *Lease) Renew(ctx context.Context) error {
	cmd, nr := l.b.run(ctx, l.ttl, renewScript(), []string{l.b.lockKey(l.key)}, l.owner, l.ttl.Milliseconds())
	n, err := cmd.Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nr // a renewal too few replicas have is a failed renewal
}

// Release implements lock.Lease.
func (l *Lease) Release(ctx context.Context) error {
	return l.release(ctx, l.b.channel(l.key))
}

// release frees the lock and publishes on channel (” publishes nothing).
func (l *Lease) release(ctx context.Context, channel string) error {
	n, err := releaseScript().Run(ctx, l.b.c, []string{l.b.lockKey(l.key)}, l.owner, channel).Int()
	if err != nil {
		return l.b.unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nil
}
