package consul

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// view is one read of KEY: its line, its token counter and its slots.
type view struct {
	line    []entry
	counter *api.KVPair // nil when the key never had a token
	slots   []*api.KVPair
}

// position is the place of session sid's entry in the line, -1 if absent.
func (v view) position(sid string) int {
	for i, e := range v.line {
		if e.kv.Session == sid && strings.HasSuffix(e.kv.Key, "/"+sid) {
			return i
		}
	}
	return -1
}

// lastToken is the counter's value (0 when missing or unreadable).
func (v view) lastToken() uint64 {
	if v.counter == nil {
		return 0
	}
	n, _ := strconv.ParseUint(string(v.counter.Value), 10, 64)
	return n
}

// read reads the line, the counter and the slots in one transaction; the
// first read of a contender joins the line in it first (a "lock" of our
// entry with our session). Any read that contains our entry shows every
// entry ahead of it that still exists: entries are only ever created at
// the back, so even a read served by a lagging server cannot show us
// ahead of a live entry.
func (c *contender) read(ctx context.Context) (view, error) {
	b, key := c.b, c.req.Key
	var ops api.TxnOps
	if c.own == nil {
		rec := record{Record: lock.NewRecord(c.req, time.Now()), Limit: c.req.Limit}
		ops = append(ops, kvOp(api.KVLock, b.lineDir(key)+c.sid, rec.encode(), 0, c.sid))
	}
	ops = append(ops, b.viewOps(key)...)
	ok, res, err := b.txn(ctx, "read the line of "+key, ops)
	if err != nil {
		return view{}, err
	}
	if !ok { // our session is gone: the lock of our entry failed
		return view{}, errSessionGone
	}
	if c.own == nil { // the lock's result comes first, then the reads'
		c.own, res = res[0].KV, res[1:]
	}
	return b.viewOf(key, res), nil
}

// viewOps read KEY's line, counter and slots (get-tree: a missing key is
// no error, where a get of it would fail the transaction).
func (b *Backend) viewOps(key string) api.TxnOps {
	return api.TxnOps{
		kvOp(api.KVGetTree, b.lineDir(key), nil, 0, ""),
		kvOp(api.KVGetTree, b.tokenKey(key), nil, 0, ""),
		kvOp(api.KVGetTree, b.slotDir(key), nil, 0, ""),
	}
}

// viewOf sorts a transaction's results into a view of KEY.
func (b *Backend) viewOf(key string, res api.TxnResults) view {
	var (
		v   view
		kvs api.KVPairs
	)
	for _, r := range res {
		switch kv := r.KV; {
		case kv == nil:
		case kv.Key == b.tokenKey(key):
			v.counter = kv
		case strings.HasPrefix(kv.Key, b.slotDir(key)):
			v.slots = append(v.slots, kv)
		case strings.HasPrefix(kv.Key, b.lineDir(key)):
			kvs = append(kvs, kv)
		}
	}
	v.line = line(kvs, b.lineDir(key))
	return v
}

// readKey reads KEY (no joining): for Inspect, Break, Resume.
func (b *Backend) readKey(ctx context.Context, key string) (view, error) {
	_, res, err := b.txn(ctx, "read "+key, b.viewOps(key))
	if err != nil {
		return view{}, err
	}
	return b.viewOf(key, res), nil
}
