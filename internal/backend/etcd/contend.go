package etcd

// Waiting on etcd, on lock.Line: the contenders stand in line in arrival
// order, "<prefix>/<escaped KEY>#wait/<lease ID in hex>", each key on its
// own lease (lock.Line keeps it alive while it waits), its create revision
// its place. A waiter watches only the deletion of the one just ahead of
// it (no polling, no herd); the first in line watches the slots (slots.go)
// and takes a free one (step.go). A waiter whose process dies stops
// keeping its lease alive: its key expires with it, and the one behind
// moves up. A try-once never joins the line (slots.go, TryOnce); a waiter
// joins at its first Wait, and again at the back when its place was lost.

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// entry is a key of ours: our place in a line, or what we hold; a
// try-once's lease, with no key (line and etcdKey "").
type entry struct {
	key     string // user's key
	line    string // the prefix of the line etcdKey stands in ("" once held)
	etcdKey string // our key
	id      clientv3.LeaseID
	rev     int64      // create revision of etcdKey: its place in the line
	rec     slotRecord // with its fencing token once held (token.go)
}

// ours compares etcdKey with the key we put: its create revision e.rev
// and its lease e.id. A create revision is not reused, except after a
// restore from a snapshot without --bump-revision (etcd-io/etcd#16028):
// the lease tells our key from one that took its revision again. Before
// Join's put, rev 0: no such key.
func (e *entry) ours() []clientv3.Cmp {
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", e.rev)}
	if e.rev == 0 {
		return cmps
	}
	return append(cmps, clientv3.Compare(clientv3.LeaseValue(e.etcdKey), "=", e.id))
}

// readOurs says whether kvs, a read of etcdKey, finds the key still ours
// (ours: our create revision, on our lease).
func (e *entry) readOurs(kvs []*mvccpb.KeyValue) bool {
	return len(kvs) > 0 && kvs[0].CreateRevision == e.rev && clientv3.LeaseID(kvs[0].Lease) == e.id
}

// Contend implements lock.Backend: a mutex is a semaphore of one.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	req.Limit = max(req.Limit, 1)
	return lock.NewLine(req, &waiter{b: b, req: req, free: -1})
}

// waiter is one process's place in a key's line: lock.Line's store.
type waiter struct {
	b   *Backend
	req lock.Request

	e       *entry           // our place; nil before we join or once lost
	ahead   *mvccpb.KeyValue // the one just ahead in line at the last read; nil: we are first
	readRev int64            // the revision of the last read
	last    uint64           // the token counter at the last read (token.go)
	free    int              // the lowest free slot at the last read; -1 none
	legacy  bool             // the last read found an older build's mutex key (slots.go)
	unread  bool             // the last read (a failed take's) is not looked at yet
	freed   chan int         // a slot whose deletion the last Watch saw
	granted time.Time        // a try-once's: just before its lease was granted

	shown  *mvccpb.KeyValue // the holder as last described
	holder lock.Holder
}

var (
	_ lock.OnceTaker   = (*waiter)(nil)
	_ lock.PlaceKeeper = (*waiter)(nil)
)

// Join implements lock.LineStore: our waiter key, on a lease of its own,
// at the back of key's line.
func (w *waiter) Join(ctx context.Context) error {
	w.Leave()
	e, err := w.grant(ctx)
	if err != nil {
		return err
	}
	e.line = w.b.linePrefix(e.key)
	e.etcdKey = fmt.Sprintf("%s%x", e.line, int64(e.id))
	resp, err := w.b.cli.Txn(ctx).If(e.ours()...).Then(clientv3.OpPut(e.etcdKey, e.rec.value(), clientv3.WithLease(e.id))).Commit()
	if err != nil || !resp.Succeeded {
		// The put may have been applied: revoking the lease removes it.
		w.b.revoke(ctx, e.id, e.etcdKey)
		if err == nil {
			err = fmt.Errorf("key %s already exists", e.etcdKey)
		}
		return w.b.opError("join the line for "+e.key, err)
	}
	e.rev = resp.Header.Revision
	w.e, w.ahead, w.free = e, nil, -1
	return nil
}

// grant grants a lease of our TTL: our entry, with no key yet.
func (w *waiter) grant(ctx context.Context) (*entry, error) {
	g, err := w.b.cli.Grant(ctx, leaseSeconds(w.req.TTL))
	if err != nil {
		return nil, w.b.opError("grant a lease for "+w.req.Key, err)
	}
	return &entry{key: w.req.Key, id: g.ID, rec: slotRecord{record: record{Record: lock.NewRecord(w.req, time.Now())}}}, nil
}

// Watch implements lock.LineStore: the deletion of the one just ahead of
// us, or, first in line, of a slot (which the next Look takes as free).
func (w *waiter) Watch(ctx context.Context) (lock.Retry, error) {
	// WithRequireLeader: a member cut off from the leader cancels the
	// watch instead of leaving it silent; we then read again.
	opts := []clientv3.OpOption{clientv3.WithRev(w.readRev + 1), clientv3.WithFilterPut()}
	watched := w.b.queuePrefix(w.req.Key)
	if w.ahead != nil {
		watched = string(w.ahead.Key)
	} else {
		opts = append(opts, clientv3.WithPrefix())
	}
	ch := w.b.cli.Watch(clientv3.WithRequireLeader(ctx), watched, opts...)
	wake, freed := make(chan struct{}, 1), make(chan int, 1)
	first := w.ahead == nil && !w.legacy
	w.freed = freed
	go func() {
		defer func() { wake <- struct{}{} }()
		for {
			select {
			case <-ctx.Done():
				return
			case wr, ok := <-ch:
				// A deletion (puts are filtered out), or compacted,
				// cancelled by the server...: read again, or take the
				// slot deleted when first in line.
				if !ok || wr.Canceled || wr.Err() != nil {
					return
				}
				if len(wr.Events) > 0 {
					i, legacy, ok := contender(watched, string(wr.Events[0].Kv.Key))
					if first && ok && !legacy {
						freed <- i
					}
					return
				}
			}
		}
	}()
	return lock.Retry{Wake: wake, After: fallbackPoll}, nil
}

// Keeper implements lock.PlaceKeeper: a keep-alive of our lease.
func (w *waiter) Keeper() func(context.Context) error {
	b, id := w.b, w.e.id
	return func(ctx context.Context) error { return b.keepAlive(ctx, id) }
}

// Leave implements lock.LineStore: out of the line (revoking our lease
// deletes our key, or the slot a take took but could not confirm).
func (w *waiter) Leave() {
	if w.e != nil {
		w.b.revoke(context.Background(), w.e.id, w.e.etcdKey)
	}
	w.e, w.ahead, w.unread = nil, nil, false
}

// QueueLen implements lock.LineCounter (status's waiting): how many
// waiters are in line for key.
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	resp, err := b.cli.Get(ctx, b.linePrefix(key), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, b.opError("count the waiters of "+key, err)
	}
	return resp.Count, nil
}
