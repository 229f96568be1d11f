package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.Lease. etcd cannot change a lease's TTL, so our
// key moves to a new lease of d (rounded up to whole seconds) in a
// transaction that checks it is still ours; the key keeps its create
// revision (the fencing token) and its place at the head of the queue.
// The old lease is then revoked.
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	g, err := l.b.cli.Grant(ctx, leaseSeconds(d))
	if err != nil {
		return l.b.opError("grant a lease to hold "+l.e.key, err)
	}
	rec := l.e.rec
	rec.Hold, rec.TTLms = mode, d.Milliseconds()
	resp, err := l.b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.e.etcdKey), "=", l.e.rev)).
		Then(clientv3.OpPut(l.e.etcdKey, rec.encode(), clientv3.WithLease(g.ID))).
		Commit()
	if err != nil || !resp.Succeeded {
		l.b.revoke(ctx, g.ID)
		if err != nil {
			return l.b.opError("hold "+l.e.key, err)
		}
		return fmt.Errorf("%s: %w", l.e.key, lock.ErrNotHeld)
	}
	old := l.e.id
	l.e.id, l.e.rec = g.ID, rec
	// The key no longer lives on the old lease; revoking it deletes nothing.
	l.b.revoke(ctx, old)
	return nil
}

// revoke drops a lease on a fresh short context; a failure only leaves a
// lease with no keys until its TTL runs out.
func (b *Backend) revoke(ctx context.Context, id clientv3.LeaseID) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.dialTO, cleanupTimeout))
	defer cancel()
	_, _ = b.cli.Revoke(cctx, id)
}

// Handle implements lock.Lease.
func (l *Lease) Handle() lock.Handle {
	return lock.Handle{Key: l.e.key, Owner: l.e.rec.Owner, Token: uint64(l.e.rev), TTLms: l.e.rec.TTLms, LeaseID: int64(l.e.id)}
}

// Resume implements lock.Backend: the key's queue must still hold a
// contender with h's create revision and owner, at its head.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	qp := b.queuePrefix(h.Key)
	resp, err := b.cli.Get(ctx, qp, clientv3.WithFirstCreate()...)
	if err != nil {
		return nil, b.opError("look up "+h.Key, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != int64(h.Token) {
		return nil, fmt.Errorf("%s: %w", h.Key, lock.ErrNotHeld)
	}
	kv := resp.Kvs[0]
	var rec record
	if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.Owner != h.Owner {
		return nil, fmt.Errorf("%s: %w", h.Key, lock.ErrNotHeld)
	}
	e := &entry{key: h.Key, qp: qp, etcdKey: string(kv.Key), id: clientv3.LeaseID(kv.Lease), rev: kv.CreateRevision, rec: rec}
	return b.newLease(e, granted), nil
}
