package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// mutexStore is the lock.LeaseStore of a mutex: our ownership of the lock
// hash, proven by the owner id (the lease's).
type mutexStore struct{ b *Backend }

// lease makes the lease of req's mutex, granted with token at granted.
func (b *Backend) lease(req lock.Request, token uint64, granted time.Time) lock.Lease {
	return lock.NewLease(lock.Grant{Key: req.Key, Owner: req.Owner, Token: token, TTL: req.TTL, Granted: granted}, mutexStore{b})
}

// Renew implements lock.LeaseStore.
func (s mutexStore) Renew(ctx context.Context, l *lock.Held) error {
	return renewed(s.b.run(ctx, l.TTL(), renewScript(), []string{s.b.lockKey(l.Key())}, l.Owner(), l.TTL().Milliseconds()))
}

// Release implements lock.LeaseStore.
func (s mutexStore) Release(ctx context.Context, l *lock.Held) error {
	return s.b.release(ctx, l.Key(), l.Owner(), s.b.channel(l.Key()))
}

// release frees key's lock if owner holds it and publishes on channel (""
// publishes nothing).
func (b *Backend) release(ctx context.Context, key, owner, channel string) error {
	return b.owned(releaseScript().Run(ctx, b.c, []string{b.lockKey(key)}, owner, channel).Int())
}

// renewed reads the reply of an owner-checked renewal (run: nr says too
// few replicas acknowledged it).
func renewed(cmd *goredis.Cmd, nr error) error {
	n, err := cmd.Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nr // a renewal too few replicas have is a failed renewal
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

// held reads the reply of an owner-checked hold (run: nr says too few
// replicas acknowledged it).
func (b *Backend) held(cmd *goredis.Cmd, nr error) error {
	if err := b.owned(cmd.Int()); err != nil {
		return err
	}
	if nr != nil {
		return &lock.UnavailableError{Msg: nr.Error() + ": the hold may not survive a failover", Err: nr}
	}
	return nil
}
