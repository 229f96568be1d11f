package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// newPlace grants a lease for req and names our key on it in the line at
// prefix line. granted is the monotonic time taken just before the grant
// was sent.
func (b *Backend) newPlace(ctx context.Context, req lock.Request, line string) (*entry, time.Time, error) {
	granted := time.Now()
	g, err := b.cli.Grant(ctx, leaseSeconds(req.TTL))
	if err != nil {
		return nil, granted, b.opError("grant a lease for "+req.Key, err)
	}
	return &entry{
		key:     req.Key,
		line:    line,
		etcdKey: fmt.Sprintf("%s%x", line, int64(g.ID)),
		id:      g.ID,
		rec:     newRecord(req, time.Now()),
	}, granted, nil
}

// joinQueue is a mutex's first Try (and its return to the queue after
// losing its place): it grants a lease and puts our key with it, in one
// transaction: when the queue is empty as its holder, with a token
// (grantOp); otherwise at the back, reading the queue's first contender
// and the token counter, and the answer is busy.
func (c *contender) joinQueue(ctx context.Context) (lock.Lease, error) {
	b, key := c.b, c.req.Key
	e, granted, err := b.newPlace(ctx, c.req, b.queuePrefix(key))
	if err != nil {
		return nil, err
	}
	var held record
	resp, err := grant(key, 0, func(t uint64) (*clientv3.TxnResponse, error) {
		held = e.rec
		held.Token = t
		return b.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(e.line).WithPrefix(), "=", 0)). // nobody in the queue
			Then(b.grantOp(key, t, clientv3.OpPut(e.etcdKey, held.encode(), clientv3.WithLease(e.id)))).
			Else(
				clientv3.OpPut(e.etcdKey, e.rec.encode(), clientv3.WithLease(e.id)),
				clientv3.OpGet(e.line, clientv3.WithFirstCreate()...),
				clientv3.OpGet(b.tokenKey(key)),
			).
			Commit()
	})
	var first []*mvccpb.KeyValue
	if err == nil && !resp.Succeeded {
		c.last, err = counterOf(key, resp.Responses[2])
		if first = resp.Responses[1].GetResponseRange().Kvs; err == nil && len(first) == 0 {
			err = errors.New("own key not found in the queue") // cannot happen: it is in the range
		}
	}
	if err != nil {
		b.cleanup(ctx, e) // the put may have been applied: revoking the lease removes it
		return nil, b.opError("join the queue of "+key, err)
	}
	e.rev = resp.Header.Revision
	if resp.Succeeded {
		e.line, e.token, e.rec = "", held.Token, held
		return b.newLease(e, granted), nil
	}
	c.e, c.ahead, c.lost, c.again = e, nil, nil, true // who is just ahead: read at once
	if err := c.describe(ctx, first[0]); err != nil {
		return nil, err
	}
	return nil, c.busy()
}

// semWaitPrefix is where the waiters for key's slots stand in line:
// outside the key's queue prefix "<prefix>/<escaped KEY>/" (where slots and
// mutex contenders live, so Inspect, Break and the mutex never see a
// waiter), and never listed (url.PathEscape escapes '#', so no escaped key
// holds one; List skips names that do).
func (b *Backend) semWaitPrefix(key string) string {
	return b.prefix + "/" + url.PathEscape(key) + "#wait/"
}

// joinLine puts our waiter key, on a lease of its own, at the back of a
// semaphore's line; the next Try reads our place at once.
func (c *contender) joinLine(ctx context.Context) error {
	e, _, err := c.b.newPlace(ctx, c.req, c.b.semWaitPrefix(c.req.Key))
	if err != nil {
		return err
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
	c.e, c.ahead, c.lost, c.again = e, nil, nil, true
	return nil
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
