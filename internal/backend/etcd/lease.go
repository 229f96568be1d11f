package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// keyStore is the lock.LeaseStore of a held etcd lock: our slot key (or,
// resumed, an older build's mutex key) on our own etcd lease, checked by
// its create revision.
type keyStore struct {
	b *Backend
	e *entry
}

// newLease makes the lease of e. granted is the monotonic time taken just
// before the request that made the lease valid: a try-once's LeaseGrant,
// a waiter's KeepAliveOnce sent with its take, or a Resume's read.
func (b *Backend) newLease(e *entry, granted time.Time) lock.Lease {
	r := e.rec
	g := lock.Grant{Key: e.key, Owner: r.Owner, Token: r.Token, TTL: time.Duration(r.TTLms) * time.Millisecond, Granted: granted, Slot: r.Slot, Limit: r.Limit}
	return lock.NewLease(g, &keyStore{b: b, e: e})
}

// LeaseID implements lock.LeaseIDer: the etcd lease backing the lock,
// named in the handle.
func (l *keyStore) LeaseID() int64 { return int64(l.e.id) }

// Renew sends one keep-alive (the lease then lasts a full TTL from when it
// was sent) and, at the same time, checks that our key still exists with
// our create revision, on our lease (entry.readOurs): a Break deletes the
// key but leaves the lease alive, and that must read as "not yours". Both
// answers of "gone" are lock.ErrNotHeld; anything else is transient. The
// two requests go out together (one round trip, not two) and are bounded
// by ctx.
func (l *keyStore) Renew(ctx context.Context, _ *lock.Held) error {
	kaDone := make(chan error, 1)
	go func() { kaDone <- l.b.keepAlive(ctx, l.e.id) }()
	resp, err := l.b.cli.Get(ctx, l.e.etcdKey) // not WithKeysOnly: etcd 3.7 then leaves out the lease
	kaErr := <-kaDone
	switch {
	case errors.Is(kaErr, lock.ErrNotHeld):
		return fmt.Errorf("%s: %w", l.e.key, kaErr)
	case err == nil && !l.e.readOurs(resp.Kvs):
		return fmt.Errorf("%s: our lock key was deleted (broken?): %w", l.e.key, lock.ErrNotHeld)
	case kaErr != nil:
		return fmt.Errorf("etcd renew %s: %w", l.e.key, kaErr)
	case err != nil:
		return fmt.Errorf("etcd renew %s: checking our key: %w", l.e.key, err)
	}
	return nil
}

// keepAlive sends one keep-alive of lease id: lock.ErrNotHeld when etcd
// says the lease is gone.
func (b *Backend) keepAlive(ctx context.Context, id clientv3.LeaseID) error {
	_, err := b.cli.KeepAliveOnce(ctx, id)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("the etcd lease expired or was revoked: %w", lock.ErrNotHeld)
	}
	return err
}

// Release deletes our key if it is still ours (compare on its create
// revision) and revokes our lease. It returns lock.ErrNotHeld when the key
// was already gone (expired, broken, released).
func (l *keyStore) Release(ctx context.Context, h *lock.Held) error {
	resp, err := l.b.cli.Txn(ctx).If(l.e.ours()...).Then(clientv3.OpDelete(l.e.etcdKey)).Commit()
	// Revoke in any case (after a Break our lease still lives). A failed
	// revoke only leaves a lease without keys until its TTL runs out.
	_, _ = l.b.cli.Revoke(ctx, l.e.id)
	switch {
	case err != nil:
		return fmt.Errorf("etcd release %s: %w", l.e.key, err)
	case !resp.Succeeded:
		return h.NotOurs()
	}
	return nil
}

// revoke drops lease id (deleting every key on it) on a fresh short
// context, since ctx may be the one that just ended. Should that fail it
// deletes key, when given; failing that the lease expires on its own
// after its TTL.
func (b *Backend) revoke(ctx context.Context, id clientv3.LeaseID, key string) {
	cctx, cancel := b.fresh(ctx)
	defer cancel()
	if _, err := b.cli.Revoke(cctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) && key != "" {
		_, _ = b.cli.Delete(cctx, key)
	}
}

// fresh is a short context of its own, for a request that must go out
// even when ctx has just ended.
func (b *Backend) fresh(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), min(b.dialTO, cleanupTimeout))
}
