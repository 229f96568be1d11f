package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.LeaseStore. etcd cannot change a lease's TTL, so
// our key moves to a new lease of d (whole seconds, rounded up) in a
// transaction that checks it is still ours (entry.ours; it keeps its create
// revision and its record's token); the old lease is then revoked.
//
// A transaction whose reply is lost may still have been applied: the key
// may now live on the new lease, and revoking that lease would delete the
// lock. So after an error Hold reads the key back and acts on what is
// there (see settle); it revokes a lease only once it knows no key of ours
// is attached to it, and leaves both alone when it cannot tell.
func (l *keyStore) Hold(ctx context.Context, h *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	g, err := l.b.cli.Grant(ctx, leaseSeconds(d))
	if err != nil {
		// A grant whose reply was lost leaves a lease with no keys that
		// expires by itself after d.
		return 0, l.b.opError("grant a lease to hold "+l.e.key, err)
	}
	rec := l.e.rec
	rec.Hold, rec.TTLms = mode, d.Milliseconds()
	resp, err := l.b.cli.Txn(ctx).If(l.e.ours()...).Then(clientv3.OpPut(l.e.etcdKey, rec.value(), clientv3.WithLease(g.ID))).Commit()
	switch {
	case err != nil:
		if err := l.settle(ctx, g.ID, d, err); err != nil {
			return 0, err
		}
	case !resp.Succeeded:
		// The key is gone or is not ours; it can never be ours again (a
		// create revision is never reused), so nothing can attach it to g.
		l.b.revoke(ctx, g.ID, "")
		return 0, h.NotOurs()
	}
	old := l.e.id
	l.e.id, l.e.rec = g.ID, rec
	// The key no longer lives on the old lease; revoking it deletes nothing.
	l.b.revoke(ctx, old, "")
	return time.Duration(rec.TTLms) * time.Millisecond, nil
}

// settle decides a Hold whose transaction (moving our key to lease g)
// failed with txnErr, reply lost or never sent, by reading the key back on
// a fresh bounded context. nil: the move was applied, the key is ours on g.
// lock.ErrNotHeld: the key is gone or not ours (g is revoked: nothing of
// ours can be on it). Any other error: the move was not seen applied, or
// the key could not be read; then no lease is revoked, since the key lives
// on one of them, and it is held until the old lease or g expires.
func (l *keyStore) settle(ctx context.Context, g clientv3.LeaseID, d time.Duration, txnErr error) error {
	rctx, cancel := l.b.fresh(ctx)
	defer cancel()
	resp, err := l.b.cli.Get(rctx, l.e.etcdKey)
	if err != nil {
		return l.b.opError(fmt.Sprintf("hold %s (no answer, and the lock could not be read back: it is held either for %s more or until it was due to expire)", l.e.key, d), txnErr)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.e.rev {
		// What the transaction compares can never match again. (Not
		// readOurs: applied, the move put our key on g.)
		l.b.revoke(ctx, g, "")
		return fmt.Errorf("%s: %w", l.e.key, lock.ErrNotHeld)
	}
	kv := resp.Kvs[0]
	var rec record
	if clientv3.LeaseID(kv.Lease) == g && json.Unmarshal(kv.Value, &rec) == nil && rec.Owner == l.e.rec.Owner {
		return nil
	}
	// Still on the old lease (or moved by another Hold of the same
	// handle): ours, but not held for d. g stays: a transaction still on
	// its way could yet move the key there.
	return l.b.opError(fmt.Sprintf("hold %s (not applied: the lock is still held until it was due to expire)", l.e.key), txnErr)
}

// Resume implements lock.Backend: one of the key's holders (holding) must
// still have h's owner and token.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	kvs, err := b.holdingKVs(ctx, h.Key, "look up ")
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		var sr slotRecord
		if err := json.Unmarshal(kv.Value, &sr); err != nil || sr.Owner != h.Owner || sr.Token != h.Token {
			continue
		}
		e := &entry{key: h.Key, etcdKey: string(kv.Key), id: clientv3.LeaseID(kv.Lease), rev: kv.CreateRevision, rec: sr}
		return b.newLease(e, granted), nil
	}
	return nil, fmt.Errorf("%s: %w", h.Key, lock.ErrNotHeld)
}
