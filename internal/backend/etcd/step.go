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

// step is a waiter's one transaction, for a mutex and a semaphore alike.
// When it has something to take (a mutex: always, its own key; a
// semaphore: the free slot of its last read) it asks whether anyone is
// still ahead of us in line and, if nobody is and our key is still ours,
// takes it and raises the token counter (takeOps, grantOp), with a
// keep-alive of our lease sent at the same time, so that the lease's
// validity counts from just before both: one round trip where a read, a
// keep-alive and a write took three. Otherwise, or when someone is ahead,
// it reads who is just ahead of us, our own key, the token counter and the
// holders (reads), at one revision, and the answer is busy.
//
// Waiters are woken only by the deletion of the one just ahead, so at a
// handover one waiter asks, not all of them; the progress line asks the
// engine for the holder on its own (cmd/progress.go).
func (c *contender) step(ctx context.Context) (lock.Lease, error) {
	e, b := c.e, c.b
	if c.sem && c.free < 0 {
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
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		held, cmps, ops = c.takeOps(t)
		return b.cli.Txn(ctx).
			If(append([]clientv3.Cmp{
				// every key of the line was created at or after ours
				clientv3.Compare(clientv3.CreateRevision(e.line), ">", e.rev-1).WithPrefix(),
				clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", e.rev),
			}, cmps...)...).
			Then(b.grantOp(e.key, t, ops...)).
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
	if held.rev == 0 {
		held.rev = resp.Header.Revision // a slot key, created by the take
	}
	return c.won(held, granted, kaErr)
}

// takeOps is what the first in line takes with token t: the entry it then
// holds, and the compares and writes of the take besides the line's. A
// mutex stamps its own key with the acquisition time and the token. A
// semaphore puts the free slot of its last read on its lease and deletes
// its waiter key, if no key under the queue prefix was put since that
// read (deletions only free slots; a put there would be a slot taken, or a
// mutex contender: the read that follows tells).
func (c *contender) takeOps(t uint64) (*entry, []clientv3.Cmp, []clientv3.Op) {
	e, now := c.e, time.Now()
	if !c.sem {
		h := *e
		h.line, h.token = "", t
		h.rec.AcquiredAt, h.rec.Token = now, t
		return &h, nil, []clientv3.Op{clientv3.OpPut(e.etcdKey, h.rec.encode(), clientv3.WithLease(e.id))}
	}
	h, put := c.b.slotTake(e.key, e.rec, c.req.Limit, c.free, e.id, t)
	return h,
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(c.b.queuePrefix(e.key)).WithPrefix(), "<", c.readRev+1)},
		[]clientv3.Op{put, clientv3.OpDelete(e.etcdKey)}
}

// reads are a step's reads: the one just ahead of us in line, our own key,
// the token counter, and the holders (a mutex: the queue's first; a
// semaphore: every key under the queue prefix, its slots).
func (c *contender) reads() []clientv3.Op {
	e, qp := c.e, c.b.queuePrefix(c.e.key)
	holders := clientv3.OpGet(qp, clientv3.WithFirstCreate()...)
	if c.sem {
		holders = clientv3.OpGet(qp, clientv3.WithPrefix())
	}
	return []clientv3.Op{
		clientv3.OpGet(e.line, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(e.rev-1))...),
		clientv3.OpGet(e.etcdKey, clientv3.WithKeysOnly()),
		clientv3.OpGet(c.b.tokenKey(e.key)),
		holders,
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
	holders := r[3].GetResponseRange().Kvs
	if c.sem {
		sr, err := readSlots(c.req, c.b.queuePrefix(c.req.Key), holders)
		if err != nil {
			return err
		}
		c.free, holders = sr.free, nil
		if sr.oldest != nil {
			holders = []*mvccpb.KeyValue{sr.oldest}
		}
	}
	if len(holders) > 0 {
		if err := c.describe(ctx, holders[0]); err != nil {
			return err
		}
	}
	c.ahead = nil
	if ahead := r[0].GetResponseRange().Kvs; len(ahead) > 0 {
		c.ahead = ahead[0]
	}
	// Nobody ahead: a semaphore's read found a slot free, take it at once.
	// (A mutex cannot get here, its compare and reads seeing one revision,
	// but it would read again rather than wait on nobody.)
	c.again = c.ahead == nil && (!c.sem || c.free >= 0)
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
// changed). A first in line that has no token yet is a waiter taking over
// from the holder that just left: until it has taken the lock, the last
// holder shown stays. A mutex that finds a slot holder is refused: every
// holder of a key must use the same --limit (as every engine says).
func (c *contender) describe(ctx context.Context, kv *mvccpb.KeyValue) error {
	if have := c.b.slotLimit(c.req.Key, kv); !c.sem && have > 1 {
		return &lock.LimitMismatchError{Key: c.req.Key, Want: 1, Have: have}
	}
	if c.shown == nil || c.shown.CreateRevision != kv.CreateRevision || c.shown.ModRevision != kv.ModRevision {
		h := c.b.holderOf(ctx, c.req.Key, kv)
		if h.Token == 0 && c.shown != nil {
			return nil
		}
		c.shown, c.holder = kv, h
	}
	return nil
}

// busy is the busy answer, naming the holder last described.
func (c *contender) busy() error {
	if c.holder.Key == "" {
		return &lock.BusyError{Holder: lock.Holder{Key: c.req.Key, ExpiresIn: -1}}
	}
	return &lock.BusyError{Holder: c.holder}
}
