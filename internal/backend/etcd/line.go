package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// linePrefix is where the waiters for key's slots stand in line: outside
// the key's queue prefix "<prefix>/<escaped KEY>/" (where the slots live,
// so Inspect and Break never see a waiter), and never listed
// (url.PathEscape escapes '#', so no escaped key holds one; List skips
// names that do).
func (b *Backend) linePrefix(key string) string {
	return b.prefix + "/" + url.PathEscape(key) + "#wait/"
}

// joinLine grants a lease and puts our waiter key on it at the back of
// key's line; the next Try reads our place at once.
func (c *contender) joinLine(ctx context.Context) error {
	b, req := c.b, c.req
	g, err := b.cli.Grant(ctx, leaseSeconds(req.TTL))
	if err != nil {
		return b.opError("grant a lease for "+req.Key, err)
	}
	e := &entry{key: req.Key, line: b.linePrefix(req.Key), id: g.ID, rec: newRecord(req, time.Now())}
	e.etcdKey = fmt.Sprintf("%s%x", e.line, int64(g.ID))
	resp, err := b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", 0)).
		Then(clientv3.OpPut(e.etcdKey, encodeJSON(e.rec), clientv3.WithLease(e.id))).
		Commit()
	if err != nil || !resp.Succeeded {
		// The put may have been applied: revoking the lease removes it.
		b.cleanup(ctx, e)
		if err == nil {
			err = fmt.Errorf("key %s already exists", e.etcdKey)
		}
		return b.opError("join the line for "+req.Key, err)
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

// QueueLen is how many waiters are in line for key (for tests and tools).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	resp, err := b.cli.Get(ctx, b.linePrefix(key), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, b.opError("count the waiters of "+key, err)
	}
	return resp.Count, nil
}
