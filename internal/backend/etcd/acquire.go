package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// entry is our place in a key's queue.
type entry struct {
	key     string // user's key
	qp      string // queue prefix
	etcdKey string // our contender key
	id      clientv3.LeaseID
	rev     int64  // create revision of etcdKey: its place in the queue
	token   uint64 // the fencing token, once held (token.go)
	rec     record
	// slot is set when etcdKey is a semaphore slot: its value then also
	// carries the limit and the slot (slotRecord).
	slot *slotRecord
}

// value is what etcdKey holds for rec: rec itself, or for a slot rec with
// the slot's limit and index.
func (e *entry) value(rec record) string {
	if e.slot != nil {
		sr := *e.slot
		sr.record = rec
		return encodeJSON(sr)
	}
	return rec.encode()
}

// cleanupTimeout caps the fresh context used to leave the queue.
const cleanupTimeout = 2 * time.Second

// errLostPlace: our lease expired or our key was deleted while we waited.
var errLostPlace = errors.New("lost our place in the etcd queue")

// enqueue grants a lease and puts our contender key with it: when the
// queue is empty, as its holder with a token (in the one transaction that
// checks the queue is empty, grantOp); otherwise at the back, reading the
// queue's first contender and the token counter. granted is the monotonic
// time taken just before the grant was sent. held says we are the holder;
// else first is the holder (or the first in line) and last the counter.
func (b *Backend) enqueue(ctx context.Context, req lock.Request) (e *entry, held bool, first *mvccpb.KeyValue, last uint64, granted time.Time, err error) {
	qp := b.queuePrefix(req.Key)
	granted = time.Now()
	g, err := b.cli.Grant(ctx, leaseSeconds(req.TTL))
	if err != nil {
		return nil, false, nil, 0, granted, b.opError("grant a lease for "+req.Key, err)
	}
	e = &entry{
		key:     req.Key,
		qp:      qp,
		etcdKey: fmt.Sprintf("%s%x", qp, int64(g.ID)),
		id:      g.ID,
		rec:     newRecord(req, time.Now()),
	}
	fail := func(err error) (*entry, bool, *mvccpb.KeyValue, uint64, time.Time, error) {
		// The put may have been applied: revoking the lease removes it.
		b.cleanup(ctx, e)
		return nil, false, nil, 0, granted, b.opError("join the queue of "+req.Key, err)
	}
	for attempt := 0; ; attempt++ {
		t := nextToken(last)
		held := e.rec
		held.Token = t
		resp, err := b.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(qp).WithPrefix(), "=", 0)). // nobody in the queue
			Then(b.grantOp(req.Key, t, clientv3.OpPut(e.etcdKey, held.encode(), clientv3.WithLease(e.id)))).
			Else(
				clientv3.OpPut(e.etcdKey, e.rec.encode(), clientv3.WithLease(e.id)),
				clientv3.OpGet(qp, clientv3.WithFirstCreate()...),
				clientv3.OpGet(b.tokenKey(req.Key)),
			).
			Commit()
		if err != nil {
			return fail(err)
		}
		if resp.Succeeded {
			ok, counter, err := grantResult(req.Key, resp.Responses[0])
			if err != nil {
				return fail(err)
			}
			if ok {
				e.rev, e.token, e.rec = resp.Header.Revision, t, held
				return e, true, nil, 0, granted, nil
			}
			// Our clock is behind the last token: offer the counter + 1.
			last = counter
			if attempt+1 >= grantAttempts {
				return fail(fmt.Errorf("the token counter of %s kept moving", req.Key))
			}
			continue
		}
		e.rev = resp.Header.Revision
		kvs := resp.Responses[1].GetResponseRange().Kvs
		if len(kvs) == 0 { // cannot happen: our own key is in the range
			return fail(errors.New("own key not found in the queue"))
		}
		if last, err = counterOf(req.Key, resp.Responses[2]); err != nil {
			return fail(err)
		}
		return e, false, kvs[0], last, granted, nil
	}
}

// cleanup leaves the queue: revoking our lease deletes our key with it, in
// one request. It runs on a fresh short context, since ctx may be the
// one that just ended; if the revoke fails we fall back to a plain delete,
// and failing that the lease expires on its own after TTL.
func (b *Backend) cleanup(ctx context.Context, e *entry) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.dialTO, cleanupTimeout))
	defer cancel()
	if _, err := b.cli.Revoke(cctx, e.id); err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return
	}
	_, _ = b.cli.Delete(cctx, e.etcdKey)
}

func (b *Backend) newLease(e *entry, granted time.Time) *Lease {
	return &Lease{b: b, e: e, granted: granted}
}

// Contend implements lock.Backend: a mutex's contenders queue in arrival
// order, each waiter watching only the contender just ahead of it (no
// polling, no herd); a semaphore's waiters watch the slots (semaphore.go).
func (b *Backend) Contend(req lock.Request) lock.Contender {
	if req.Limit > 1 {
		return &semContender{b: b, req: req}
	}
	return &queueContender{b: b, req: req}
}

// queueContender is our place in a key's queue. Its first Try grants a
// lease and puts our contender key with it (enqueue): the lock is ours if
// no contender is ahead. A try-once then leaves (Leave revokes the lease,
// deleting the key). A waiter keeps its lease alive while queued; each
// later Try reads whether anyone is still ahead, and Wait watches the
// deletion of the contender just ahead. If our place is lost while waiting
// (our lease expired, say during a long partition, or someone deleted our
// key), the next Try joins again at the back.
type queueContender struct {
	b   *Backend
	req lock.Request

	e       *entry           // our place; nil before the first Try or once lost
	ahead   *mvccpb.KeyValue // the contender just ahead, at the last read
	readRev int64            // the revision of the last read
	last    uint64           // the token counter at the last read (token.go)

	shown  *mvccpb.KeyValue // the holder's key as last described
	holder lock.Holder

	kaStop  func()        // stops the keep-alive of our place
	lost    chan struct{} // closed by the keep-alive when our lease is gone
	unwatch context.CancelFunc
	wake    chan struct{}
}

// Try implements lock.Contender.
func (c *queueContender) Try(ctx context.Context) (lock.Lease, error) {
	if err := lock.ValidateRequest(c.req); err != nil {
		return nil, err
	}
	c.stopWatch()
	if c.e != nil && c.placeLost() {
		c.stopKeepAlive()
		c.b.cleanup(ctx, c.e)
		c.e = nil
	}
	if c.e == nil {
		e, held, first, last, granted, err := c.b.enqueue(ctx, c.req)
		if err != nil {
			return nil, err
		}
		c.e, c.ahead, c.readRev, c.last = e, nil, 0, last
		if held {
			return c.b.newLease(e, granted), nil
		}
		return nil, c.busy(ctx, first)
	}
	l, ahead, first, err := c.takeIfFirst(ctx)
	switch {
	case errors.Is(err, errLostPlace):
		c.stopKeepAlive()
		c.b.cleanup(ctx, c.e)
		c.e = nil
		return nil, &lock.BusyError{Holder: c.lastHolder()} // join again at once
	case err != nil:
		// A transient failure (leader change, timeout) is the wait loop's
		// to ride out; we keep our place and read again on the next Try.
		return nil, err
	case l != nil:
		c.stopKeepAlive() // the holder's keeper renews from here on
		return l, nil
	}
	c.ahead = ahead
	if first != nil {
		return nil, c.busy(ctx, first)
	}
	return nil, &lock.BusyError{Holder: c.lastHolder()}
}

// busy describes the holder kv (asking etcd for its time left only when
// the holder's key changed) and returns the busy answer. A first in line
// that has no token yet is a waiter taking over from the holder that just
// left: until it has taken the lock, the last holder shown stays.
func (c *queueContender) busy(ctx context.Context, kv *mvccpb.KeyValue) error {
	// A slot holder ahead: the key is a semaphore, and every holder of a
	// key must use the same --limit (as every engine says).
	if strings.HasPrefix(string(kv.Key), c.b.slotPrefix(c.req.Key)) {
		var rec slotRecord
		if json.Unmarshal(kv.Value, &rec) == nil && rec.Limit > 1 {
			return &lock.LimitMismatchError{Key: c.req.Key, Want: 1, Have: rec.Limit}
		}
	}
	if c.shown == nil || c.shown.CreateRevision != kv.CreateRevision || c.shown.ModRevision != kv.ModRevision {
		h := c.b.holderOf(ctx, c.req.Key, kv)
		if h.Token == 0 && c.shown != nil {
			return &lock.BusyError{Holder: c.holder}
		}
		c.shown, c.holder = kv, h
	}
	return &lock.BusyError{Holder: c.holder}
}

func (c *queueContender) lastHolder() lock.Holder {
	if c.shown == nil {
		return lock.Holder{Key: c.req.Key, ExpiresIn: -1}
	}
	return c.holder
}

func (c *queueContender) placeLost() bool {
	if c.lost == nil {
		return false
	}
	select {
	case <-c.lost:
		return true
	default:
		return false
	}
}

// Wait implements lock.Contender: keep our lease alive while queued and
// watch the deletion of the contender just ahead (and any change of the
// holder's key, to keep progress current). It never polls.
func (c *queueContender) Wait(ctx context.Context) (lock.Retry, error) {
	if c.e == nil || c.ahead == nil {
		return lock.Retry{After: 0}, nil // (re)joined or first read due: read at once
	}
	if c.kaStop == nil {
		c.startKeepAlive(ctx)
	}
	// WithRequireLeader: a member cut off from the leader cancels the
	// watches instead of leaving them silent; we then read again.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	c.unwatch = cancel
	aheadCh := c.b.cli.Watch(wctx, string(c.ahead.Key), clientv3.WithRev(c.readRev+1), clientv3.WithFilterPut())
	wake := make(chan struct{}, 1)
	lost := c.lost
	go func() {
		defer func() { wake <- struct{}{} }()
		for {
			select {
			case <-wctx.Done():
				return
			case <-lost:
				return
			case wr, ok := <-aheadCh:
				if !ok || wr.Canceled || wr.Err() != nil {
					return // compacted, cancelled by the server...: read again
				}
				for _, ev := range wr.Events {
					if ev.Type == mvccpb.DELETE {
						return
					}
				}
			}
		}
	}()
	return lock.Retry{Wake: wake, After: lock.NoBound}, nil
}

// Leave implements lock.Contender: out of the queue (revoking our lease
// deletes our key).
func (c *queueContender) Leave() {
	c.stopWatch()
	c.stopKeepAlive()
	if c.e != nil {
		c.b.cleanup(context.Background(), c.e)
		c.e = nil
	}
}

func (c *queueContender) stopWatch() {
	if c.unwatch != nil {
		c.unwatch()
		c.unwatch = nil
	}
}

func (c *queueContender) startKeepAlive(ctx context.Context) {
	kactx, cancel := context.WithCancel(ctx)
	lost := make(chan struct{})
	done := make(chan struct{})
	e, ttl := c.e, time.Duration(c.e.rec.TTLms)*time.Millisecond
	go func() {
		defer close(done)
		c.b.keepAlive(kactx, e.id, ttl, lost)
	}()
	c.lost = lost
	c.kaStop = func() { cancel(); <-done }
}

func (c *queueContender) stopKeepAlive() {
	if c.kaStop != nil {
		c.kaStop()
		c.kaStop = nil
	}
}

// keepAlive renews our lease every TTL/3 until ctx ends; it closes lost
// when the server says the lease is gone. Other errors are retried.
func (b *Backend) keepAlive(ctx context.Context, id clientv3.LeaseID, ttl time.Duration, lost chan<- struct{}) {
	every := max(ttl/3, 50*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		kctx, cancel := context.WithTimeout(ctx, every)
		_, err := b.cli.KeepAliveOnce(kctx, id)
		cancel()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			close(lost)
			return
		}
	}
}

// takeIfFirst asks, in one transaction, whether anyone is still ahead of
// us and, if nobody is, takes the lock: it stamps the acquisition time and
// the token on our key (the compare on its create revision makes sure it
// is still ours) and raises the token counter (grantOp). A keep-alive of
// our lease goes out at the same time, so that the lease's validity counts
// from just before both were sent: one round trip where a read, a
// keep-alive and a write took three. Its answers: the lease (l); or the
// contender just ahead and the queue's first (ahead, first: busy); or
// errLostPlace (our lease expired or our key was deleted while we waited);
// or a transient error.
//
// Waiters are woken only by the deletion of the contender just ahead, so
// at a handover one waiter asks, not all of them; the progress line asks
// the engine for the holder on its own (cmd/progress.go).
func (c *queueContender) takeIfFirst(ctx context.Context) (l *Lease, ahead, first *mvccpb.KeyValue, err error) {
	e, b := c.e, c.b
	granted := time.Now()
	kaDone := make(chan error, 1)
	go func() {
		_, err := b.cli.KeepAliveOnce(ctx, e.id)
		kaDone <- err
	}()
	var resp *clientv3.TxnResponse
	var rec record
	for attempt := 0; ; attempt++ {
		t := nextToken(c.last)
		rec = e.rec
		rec.AcquiredAt, rec.Token = time.Now(), t
		resp, err = b.cli.Txn(ctx).
			If(
				// every key of the queue was created at or after ours
				clientv3.Compare(clientv3.CreateRevision(e.qp), ">", e.rev-1).WithPrefix(),
				clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", e.rev),
			).
			Then(b.grantOp(e.key, t, clientv3.OpPut(e.etcdKey, rec.encode(), clientv3.WithLease(e.id)))).
			Else(
				clientv3.OpGet(e.qp, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(e.rev-1))...),
				clientv3.OpGet(e.qp, clientv3.WithFirstCreate()...),
				clientv3.OpGet(e.etcdKey, clientv3.WithKeysOnly()),
				clientv3.OpGet(b.tokenKey(e.key)),
			).
			Commit()
		if err != nil || !resp.Succeeded {
			break
		}
		ok, counter, gerr := grantResult(e.key, resp.Responses[0])
		if gerr != nil {
			err = gerr
			break
		}
		if ok {
			break
		}
		// Our clock is behind the last token: offer the counter + 1.
		c.last = counter
		if attempt+1 >= grantAttempts {
			err = fmt.Errorf("the token counter of %s kept moving", e.key)
			break
		}
	}
	kaErr := <-kaDone
	if errors.Is(kaErr, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil, nil, nil, errLostPlace
	}
	if err != nil {
		return nil, nil, nil, b.opError("wait for "+c.req.Key, err)
	}
	c.readRev = resp.Header.Revision
	if !resp.Succeeded {
		if mine := resp.Responses[2].GetResponseRange().Kvs; len(mine) == 0 || mine[0].CreateRevision != e.rev {
			return nil, nil, nil, errLostPlace // our key was deleted
		}
		last, err := counterOf(e.key, resp.Responses[3])
		if err != nil {
			return nil, nil, nil, b.opError("wait for "+c.req.Key, err)
		}
		c.last = last
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			ahead = kvs[0]
		}
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
			first = kvs[0]
		}
		if ahead == nil {
			// Nobody ahead by now (the compare saw one that has gone
			// since): read again at once.
			return nil, nil, nil, b.opError("wait for "+c.req.Key, errors.New("the queue changed while it was read"))
		}
		return nil, ahead, first, nil
	}
	if kaErr != nil {
		// The lock is ours, but the lease's validity is not known: the
		// next Try asks again (the same transaction succeeds again, with
		// a new token).
		return nil, nil, nil, b.opError("renew the lease for "+e.key, kaErr)
	}
	e.rec, e.token = rec, rec.Token
	return b.newLease(e, granted), nil, nil, nil
}
