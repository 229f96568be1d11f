package etcd

// Fair waiting for a semaphore's slots on etcd: waiters take freed slots in
// arrival order, a waiter that dies cannot block the line, and a freed slot
// wakes one waiter (no herd).
//
// # Layout
//
// A waiter puts a key of its own, attached to its own lease (kept alive
// while it waits), under the key's line:
//
//	<prefix>/<url.PathEscape(KEY)>#wait/<lease ID in hex>
//
// outside the key's queue prefix "<prefix>/<escaped KEY>/" (where slots and
// mutex contenders live, so Inspect, Break and the mutex never see a
// waiter), and never listed (url.PathEscape escapes '#', so no escaped key
// holds one; List skips names that do). The waiter key's create revision is
// its place in line.
//
// Only the first waiter (no waiter key with a lower create revision) may
// take a free slot: in one transaction it puts the slot key on its own
// lease and deletes its waiter key, requiring the slots unchanged since its
// read and its waiter key still its own. Each other waiter watches the
// deletion of the waiter just ahead of it; the first watches the slots for
// deletions (a release, a break, an expired lease), with semFallbackPoll as
// the bound should a watch stay silent. A waiter whose process dies stops
// keeping its lease alive: the lease expires after the TTL, its key goes
// with it, and the waiter behind it moves up.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// semWaitPrefix is where the waiters for key's slots stand in line.
func (b *Backend) semWaitPrefix(key string) string {
	return b.prefix + "/" + url.PathEscape(key) + "#wait/"
}

// waiterHolder describes a waiter (its key kv) as the one a busy acquirer
// waits for: who it is, no token and no owner (it holds nothing yet).
func waiterHolder(key string, kv *mvccpb.KeyValue) lock.Holder {
	h := lock.Holder{Key: key, ExpiresIn: -1}
	var r record
	if json.Unmarshal(kv.Value, &r) == nil {
		h.Meta = lock.Meta{Host: r.Host, PID: r.PID, User: r.User, Command: r.Command, Note: r.Note}
	}
	return h
}

// QueueLen is how many waiters are in line for key: mutex contenders
// behind the holder, and a semaphore's waiters (for tests and tools).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	qp := b.queuePrefix(key)
	resp, err := b.cli.Txn(ctx).Then(
		clientv3.OpGet(qp, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(b.semWaitPrefix(key), clientv3.WithPrefix(), clientv3.WithCountOnly()),
	).Commit()
	if err != nil {
		return 0, b.opError("count the waiters of "+key, err)
	}
	var mutex int64
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		if !strings.HasPrefix(strings.TrimPrefix(string(kv.Key), qp), "slot/") {
			mutex++
		}
	}
	return resp.Responses[1].GetResponseRange().Count + max(0, mutex-1), nil
}

// semContender is one process's attempt at a semaphore slot. Before its
// first Wait each Try is a try-once (semAttempt). The first Wait joins the
// line; from then on each Try reads whether anyone is ahead and, when we
// are first and a slot is free, takes it (step). If our place is lost
// (our lease expired, say during a long partition, or our key was
// deleted), the next Try joins again at the back.
type semContender struct {
	b   *Backend
	req lock.Request

	waiting bool             // Wait was called: Try steps in line
	w       *entry           // our waiter key and lease; nil before the first Wait or once lost
	ahead   *mvccpb.KeyValue // the waiter just ahead at the last read; nil: we are first
	readRev int64            // the revision of the last read
	last    uint64           // the token counter at the last read (token.go)
	again   bool             // look again at once

	shown  *mvccpb.KeyValue // the slot holder as last described
	holder lock.Holder

	kaStop  func()        // stops the keep-alive of our place
	lost    chan struct{} // closed by the keep-alive when our lease is gone
	unwatch context.CancelFunc
}

// Try implements lock.Contender.
func (c *semContender) Try(ctx context.Context) (lock.Lease, error) {
	c.stopWatch()
	if err := lock.ValidateRequest(c.req); err != nil {
		return nil, err
	}
	if !c.waiting {
		l, rev, err := c.b.semAttempt(ctx, c.req)
		if err != nil {
			c.readRev = rev
			var busy *lock.BusyError
			if errors.As(err, &busy) {
				c.holder = busy.Holder
			}
			return nil, err
		}
		return l, nil
	}
	l, err := c.step(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Wait implements lock.Contender. The first Wait joins the line, so that a
// waiter holds its place when Wait returns; later ones watch the waiter
// just ahead, or, while first, the slots.
func (c *semContender) Wait(ctx context.Context) (lock.Retry, error) {
	if !c.waiting {
		c.waiting = true
		if err := c.join(ctx); err != nil {
			return lock.Retry{}, err
		}
		return lock.Retry{After: 0}, nil // read our place at once
	}
	if c.w == nil || c.again {
		c.again = false
		return lock.Retry{After: 0}, nil
	}
	if c.kaStop == nil {
		c.startKeepAlive(ctx)
	}
	// WithRequireLeader: a member cut off from the leader cancels the
	// watch instead of leaving it silent; we then read again.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	c.unwatch = cancel
	var ch clientv3.WatchChan
	if c.ahead != nil {
		ch = c.b.cli.Watch(wctx, string(c.ahead.Key), clientv3.WithRev(c.readRev+1), clientv3.WithFilterPut())
	} else {
		ch = c.b.cli.Watch(wctx, c.b.queuePrefix(c.req.Key), clientv3.WithPrefix(), clientv3.WithRev(c.readRev+1), clientv3.WithFilterPut())
	}
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
			case wr, ok := <-ch:
				if !ok || wr.Canceled || wr.Err() != nil || len(wr.Events) > 0 {
					return
				}
			}
		}
	}()
	return lock.Retry{Wake: wake, After: semFallbackPoll}, nil
}

// Leave implements lock.Contender: out of the line (revoking our lease
// deletes our waiter key).
func (c *semContender) Leave() {
	c.stopWatch()
	c.stopKeepAlive()
	if c.w != nil {
		c.b.cleanup(context.Background(), c.w)
		c.w = nil
	}
}

// join grants our lease and puts our waiter key at the back of the line.
func (c *semContender) join(ctx context.Context) error {
	g, err := c.b.cli.Grant(ctx, leaseSeconds(c.req.TTL))
	if err != nil {
		return c.b.opError("grant a lease for "+c.req.Key, err)
	}
	e := &entry{
		key:     c.req.Key,
		qp:      c.b.queuePrefix(c.req.Key),
		etcdKey: fmt.Sprintf("%s%x", c.b.semWaitPrefix(c.req.Key), int64(g.ID)),
		id:      g.ID,
		rec:     newRecord(c.req, time.Now()),
	}
	resp, err := c.b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", 0)).
		Then(clientv3.OpPut(e.etcdKey, e.rec.encode(), clientv3.WithLease(e.id))).
		Commit()
	if err != nil || !resp.Succeeded {
		// The put may have been applied: revoking the lease removes it.
		c.b.cleanup(ctx, e)
		if err == nil {
			err = fmt.Errorf("key %s already exists", e.etcdKey)
		}
		return c.b.opError("join the line for "+c.req.Key, err)
	}
	e.rev = resp.Header.Revision
	c.w, c.ahead, c.lost = e, nil, nil
	return nil
}

// step reads our place and the slots at one revision, and takes the lowest
// free slot when nobody is ahead of us.
func (c *semContender) step(ctx context.Context) (lock.Lease, error) {
	if c.w != nil && c.placeLost() {
		c.dropPlace(ctx)
	}
	if c.w == nil {
		if err := c.join(ctx); err != nil {
			return nil, err
		}
	}
	qp := c.b.queuePrefix(c.req.Key)
	resp, err := c.b.cli.Txn(ctx).Then(
		clientv3.OpGet(c.b.semWaitPrefix(c.req.Key), append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(c.w.rev-1))...),
		clientv3.OpGet(qp, clientv3.WithPrefix()),
		clientv3.OpGet(c.w.etcdKey, clientv3.WithKeysOnly()),
		clientv3.OpGet(c.b.tokenKey(c.req.Key)),
	).Commit()
	if err != nil {
		// A transient failure is the wait loop's to ride out; we keep our
		// place and read again on the next Try.
		return nil, c.b.opError("wait for "+c.req.Key, err)
	}
	c.readRev = resp.Header.Revision
	if c.last, err = counterOf(c.req.Key, resp.Responses[3]); err != nil {
		return nil, c.b.opError("wait for "+c.req.Key, err)
	}
	if own := resp.Responses[2].GetResponseRange().Kvs; len(own) == 0 || own[0].CreateRevision != c.w.rev {
		c.dropPlace(ctx) // our key was deleted: join again at once
		c.again = true
		return nil, &lock.BusyError{Holder: c.holder}
	}
	sr, err := readSlots(c.req, qp, resp.Responses[1].GetResponseRange().Kvs)
	if err != nil {
		return nil, err
	}
	c.describe(ctx, sr.oldest)
	if ahead := resp.Responses[0].GetResponseRange().Kvs; len(ahead) > 0 {
		c.ahead = ahead[0]
		return nil, &lock.BusyError{Holder: c.holder}
	}
	c.ahead = nil
	if sr.free < 0 {
		return nil, &lock.BusyError{Holder: c.holder}
	}
	return c.take(ctx, sr.free)
}

// take makes the first waiter the holder of slot free: renew our lease
// once more (validity counts from just before this), then, in one
// transaction, put the slot key on it and delete our waiter key, if the
// slots are as we read them and our waiter key is still ours.
func (c *semContender) take(ctx context.Context, free int) (lock.Lease, error) {
	c.stopKeepAlive()
	w, b := c.w, c.b
	granted := time.Now()
	if _, err := b.cli.KeepAliveOnce(ctx, w.id); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			c.dropPlace(ctx)
			c.again = true
			return nil, &lock.BusyError{Holder: c.holder}
		}
		return nil, b.opError("renew the lease for "+w.key, err)
	}
	sk := b.slotPrefix(w.key) + strconv.Itoa(free)
	t := nextToken(c.last)
	rec := slotRecord{record: w.rec, Limit: c.req.Limit, Slot: free}
	rec.AcquiredAt, rec.QueuedAt, rec.Token = time.Now(), time.Time{}, t
	tr, err := b.cli.Txn(ctx).
		If(
			clientv3.Compare(clientv3.ModRevision(w.qp).WithPrefix(), "<", c.readRev+1),
			clientv3.Compare(clientv3.CreateRevision(w.etcdKey), "=", w.rev),
		).
		Then(b.grantOp(w.key, t,
			clientv3.OpPut(sk, encodeJSON(rec), clientv3.WithLease(w.id)),
			clientv3.OpDelete(w.etcdKey),
		)).
		Commit()
	if err != nil {
		// If it was applied, our waiter key is gone and the next step
		// drops our lease, and the slot on it with it.
		return nil, b.opError("take a slot of "+w.key, err)
	}
	if !tr.Succeeded {
		c.again = true // the slots changed since our read: look again
		return nil, &lock.BusyError{Holder: c.holder}
	}
	ok, last, err := grantResult(w.key, tr.Responses[0])
	if err != nil {
		return nil, b.opError("take a slot of "+w.key, err)
	}
	if !ok {
		// Our clock is behind the last token: again at once, offering
		// the counter + 1.
		c.last, c.again = last, true
		return nil, &lock.BusyError{Holder: c.holder}
	}
	e := &entry{key: w.key, qp: w.qp, etcdKey: sk, id: w.id, rev: tr.Header.Revision, token: t, rec: rec.record, slot: &rec}
	c.w = nil
	return &SlotLease{l: b.newLease(e, granted), slot: free}, nil
}

// describe names the oldest slot holder (asking etcd for its time left
// only when it changed); with no slot held the last description stays.
func (c *semContender) describe(ctx context.Context, kv *mvccpb.KeyValue) {
	if kv == nil {
		return
	}
	if c.shown == nil || c.shown.CreateRevision != kv.CreateRevision || c.shown.ModRevision != kv.ModRevision {
		c.shown, c.holder = kv, c.b.holderOf(ctx, c.req.Key, kv)
	}
}

// dropPlace leaves the line: our waiter key goes with our lease.
func (c *semContender) dropPlace(ctx context.Context) {
	c.stopKeepAlive()
	if c.w != nil {
		c.b.cleanup(ctx, c.w)
		c.w = nil
	}
}

func (c *semContender) placeLost() bool {
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

func (c *semContender) stopWatch() {
	if c.unwatch != nil {
		c.unwatch()
		c.unwatch = nil
	}
}

func (c *semContender) startKeepAlive(ctx context.Context) {
	kactx, cancel := context.WithCancel(ctx)
	lost := make(chan struct{})
	done := make(chan struct{})
	id, ttl := c.w.id, time.Duration(c.w.rec.TTLms)*time.Millisecond
	go func() {
		defer close(done)
		c.b.keepAlive(kactx, id, ttl, lost)
	}()
	c.lost = lost
	c.kaStop = func() { cancel(); <-done }
}

func (c *semContender) stopKeepAlive() {
	if c.kaStop != nil {
		c.kaStop()
		c.kaStop = nil
	}
}
