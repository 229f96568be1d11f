package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// step is a waiter's one transaction. When its last read found a slot
// free, it asks whether anyone is still ahead of us in line and, if nobody
// is, our key is still ours and no key under the queue prefix was put
// since that read (deletions only free slots; a put there is a slot taken,
// or an older build's mutex contender: the read that follows tells), it
// puts the free slot on our lease, deletes our waiter key and raises the
// token counter (slotTake, grantOp), with a keep-alive of our lease sent at
// the same time, so that the lease's validity counts from just before
// both. Otherwise, or when someone is ahead, it reads who is just ahead of
// us, our own key, the token counter and the slots (reads), at one
// revision, and the answer is busy.
//
// Waiters are woken only by the deletion of the one just ahead, so at a
// handover one waiter asks, not all of them; the progress line asks the
// engine for the holder on its own (cmd/progress.go).
func (c *contender) step(ctx context.Context) (lock.Lease, error) {
	e, b := c.e, c.b
	if c.free < 0 {
		resp, err := b.cli.Txn(ctx).Then(c.reads()...).Commit()
		if err != nil {
			// A transient failure (leader change, timeout) is the wait
			// loop's to ride out; we keep our place and read again.
			return nil, b.opError("wait for "+e.key, err)
		}
		return nil, c.read(ctx, resp)
	}
	granted := time.Now()
	kaDone := make(chan error, 1)
	go func() {
		_, err := b.cli.KeepAliveOnce(ctx, e.id)
		kaDone <- err
	}()
	var held *entry
	resp, err := grant(e.key, c.last, func(t uint64) (*clientv3.TxnResponse, error) {
		var put clientv3.Op
		held, put = b.slotTake(e.key, e.rec, c.req.Limit, c.free, e.id, t)
		return b.cli.Txn(ctx).
			If(
				// every key of the line was created at or after ours
				clientv3.Compare(clientv3.CreateRevision(e.line), ">", e.rev-1).WithPrefix(),
				clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", e.rev),
				clientv3.Compare(clientv3.ModRevision(b.queuePrefix(e.key)).WithPrefix(), "<", c.readRev+1),
			).
			Then(b.grantOp(e.key, t, put, clientv3.OpDelete(e.etcdKey))).
			Else(c.reads()...).
			Commit()
	})
	kaErr := <-kaDone
	switch {
	case errors.Is(kaErr, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrLeaseNotFound):
		c.dropPlace(ctx) // our lease is gone: join again at once
		return nil, c.busy()
	case err != nil:
		return nil, b.opError("wait for "+e.key, err)
	case !resp.Succeeded:
		return nil, c.read(ctx, resp)
	}
	held.rev = resp.Header.Revision // the slot key, created by the take
	return c.won(held, granted, kaErr)
}

// reads are a step's reads: the one just ahead of us in line, our own key,
// the token counter, and every key under the queue prefix (the slots).
func (c *contender) reads() []clientv3.Op {
	e := c.e
	return []clientv3.Op{
		clientv3.OpGet(e.line, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(e.rev-1))...),
		clientv3.OpGet(e.etcdKey, clientv3.WithKeysOnly()),
		clientv3.OpGet(c.b.tokenKey(e.key)),
		clientv3.OpGet(c.b.queuePrefix(e.key), clientv3.WithPrefix()),
	}
}

// read takes in the answer to reads: a busy answer naming the holder, or a
// *lock.LimitMismatchError when the holders use another limit.
func (c *contender) read(ctx context.Context, resp *clientv3.TxnResponse) error {
	r := resp.Responses
	c.readRev = resp.Header.Revision
	if mine := r[1].GetResponseRange().Kvs; len(mine) == 0 || mine[0].CreateRevision != c.e.rev {
		c.dropPlace(ctx) // our key was deleted: join again at once
		return c.busy()
	}
	var err error
	if c.last, err = counterOf(c.req.Key, r[2]); err != nil {
		return c.b.opError("wait for "+c.req.Key, err)
	}
	sr, err := readSlots(c.req, c.b.queuePrefix(c.req.Key), r[3].GetResponseRange().Kvs)
	if err != nil {
		return err
	}
	c.free, c.legacy = sr.free, sr.legacy
	if sr.oldest != nil {
		c.describe(ctx, sr.oldest)
	}
	c.ahead = nil
	if ahead := r[0].GetResponseRange().Kvs; len(ahead) > 0 {
		c.ahead = ahead[0]
	}
	c.again = c.ahead == nil && c.free >= 0 // first, and a slot is free: take it at once
	return c.busy()
}

// won ends a successful take. When the keep-alive sent with it failed, the
// lock is ours but the lease's validity is not known: the next Try asks
// (confirm).
func (c *contender) won(held *entry, granted time.Time, kaErr error) (lock.Lease, error) {
	c.stopKeepAlive() // the holder's keeper renews from here on
	l := c.b.newLease(held, granted)
	if kaErr != nil {
		c.e, c.pending = held, held
		return nil, c.b.opError("renew the lease for "+held.key, kaErr)
	}
	c.e = nil
	return l, nil
}

// confirm renews a lease taken while its keep-alive failed (won); the
// lease's validity counts from just before this renewal.
func (c *contender) confirm(ctx context.Context) (lock.Lease, error) {
	l := c.b.newLease(c.pending, time.Now())
	err := l.Renew(ctx)
	switch {
	case errors.Is(err, lock.ErrNotHeld):
		c.pending = nil
		c.dropPlace(ctx) // not ours any more: join again at once
		return nil, c.busy()
	case err != nil:
		return nil, c.b.opError("renew the lease for "+c.req.Key, err)
	}
	c.pending, c.e = nil, nil
	return l, nil
}

// describe names the holder kv (asking etcd for its time left only when it
// changed). A holder that has no token yet is an older build's waiter
// taking over from the holder that just left: until it has taken the
// lock, the last holder shown stays.
func (c *contender) describe(ctx context.Context, kv *mvccpb.KeyValue) {
	if c.shown == nil || c.shown.CreateRevision != kv.CreateRevision || c.shown.ModRevision != kv.ModRevision {
		h := c.b.holderOf(ctx, c.req.Key, kv)
		if h.Token == 0 && c.shown != nil {
			return
		}
		c.shown, c.holder = kv, h
	}
}

// busy is the busy answer, naming the holder last described.
func (c *contender) busy() error {
	if c.holder.Key == "" {
		return &lock.BusyError{Holder: lock.Holder{Key: c.req.Key, ExpiresIn: -1}}
	}
	return &lock.BusyError{Holder: c.holder}
}
