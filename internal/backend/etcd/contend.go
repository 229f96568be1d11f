package etcd

// Waiting on etcd, a mutex being a semaphore of one: contenders stand in a
// line in arrival order, "<prefix>/<escaped KEY>#wait/<lease ID in hex>",
// each in a key of its own attached to its own lease (kept alive while it
// waits), whose create revision is its place. A waiter watches only the
// deletion of the one just ahead of it (no polling, no herd: a handover
// wakes one waiter); the first in line watches the slots (slots.go) and,
// when one is free, takes it in one transaction (step.go) that checks
// nobody is ahead, our key is still ours and no slot was taken since our
// read, grants the token (token.go), puts the slot on our lease and
// deletes our waiter key, with a KeepAliveOnce sent alongside. A waiter
// whose process dies stops keeping its lease alive: the lease expires
// after the TTL, its key goes with it, and the waiter behind it moves up.
//
// A try-once never joins the line (slots.go, trySlot); a waiter joins it
// at its first Wait. If our place is lost while we wait (our lease
// expired, say during a long partition, or someone deleted our key), the
// next Try joins again at the back.

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// entry is a key of ours: our place in a line, or what we hold.
type entry struct {
	key     string // user's key
	line    string // the prefix of the line etcdKey stands in ("" once held)
	etcdKey string // our key
	id      clientv3.LeaseID
	rev     int64  // create revision of etcdKey: its place in the line
	rec     record // with its fencing token once held (token.go)
	// slot is set when etcdKey is a slot: its value then also carries the
	// limit and the slot (slotRecord). nil: an older build's mutex key
	// (resumed from its handle).
	slot *slotRecord
}

// value is what etcdKey holds for rec: with a slot's limit and index.
func (e *entry) value(rec record) string {
	if e.slot == nil {
		return encodeJSON(rec)
	}
	sr := *e.slot
	sr.record = rec
	return encodeJSON(sr)
}

// Contend implements lock.Backend: a mutex is a semaphore of one.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	req.Limit = max(req.Limit, 1)
	return &contender{b: b, req: req, free: -1}
}

// contender is one process's place in a key's line.
type contender struct {
	b   *Backend
	req lock.Request

	waiting bool             // Wait was called
	e       *entry           // our place; nil before we join or once lost
	ahead   *mvccpb.KeyValue // the one just ahead in line at the last read; nil: we are first
	readRev int64            // the revision of the last read
	last    uint64           // the token counter at the last read (token.go)
	free    int              // the lowest free slot at the last read; -1 none
	legacy  bool             // the last read found an older build's mutex key (slots.go)
	freed   chan int         // a slot whose deletion the last Wait saw
	again   bool             // read again at once
	pending *entry           // taken, but its validity not known yet (confirm)

	shown  *mvccpb.KeyValue // the holder as last described
	holder lock.Holder

	kaStop  func()        // stops the keep-alive of our place
	lost    chan struct{} // closed by the keep-alive when our lease is gone
	unwatch context.CancelFunc
}

// Try implements lock.Contender.
func (c *contender) Try(ctx context.Context) (lock.Lease, error) {
	if err := lock.ValidateRequest(c.req); err != nil {
		return nil, err
	}
	c.stopWatch()
	select {
	case i := <-c.freed:
		// First in line, the last Wait saw this slot deleted after our
		// last read: it is free if nothing was put under the queue prefix
		// since that read, which the take's compare checks. Only this Try
		// may use it: a later read makes it stale.
		c.free = i
	default:
	}
	c.freed = nil
	if c.pending != nil {
		return c.confirm(ctx)
	}
	if c.e != nil && c.placeLost() {
		c.dropPlace(ctx)
	}
	switch {
	case c.e != nil:
		return c.step(ctx)
	case !c.waiting:
		return c.trySlot(ctx) // a try-once never joins the line
	}
	if err := c.joinLine(ctx); err != nil {
		return nil, err
	}
	return nil, c.busy()
}

// Wait implements lock.Contender: keep our lease alive while we wait and
// watch the deletion of the one just ahead of us. A waiter joins the line
// at its first Wait, so that it holds its place when Wait returns; the
// first in line watches the slots.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
	if !c.waiting {
		c.waiting = true
		if c.e == nil {
			if err := c.joinLine(ctx); err != nil {
				return lock.Retry{}, err
			}
		}
	}
	if c.e == nil || c.again {
		c.again = false
		return lock.Retry{After: 0}, nil // (re)join or read at once
	}
	if c.kaStop == nil {
		c.startKeepAlive(ctx)
	}
	// WithRequireLeader: a member cut off from the leader cancels the
	// watch instead of leaving it silent; we then read again.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	c.unwatch = cancel
	opts := []clientv3.OpOption{clientv3.WithRev(c.readRev + 1), clientv3.WithFilterPut()}
	watched := c.b.queuePrefix(c.req.Key)
	if c.ahead != nil {
		watched = string(c.ahead.Key)
	} else {
		opts = append(opts, clientv3.WithPrefix())
	}
	ch := c.b.cli.Watch(wctx, watched, opts...)
	wake, freed := make(chan struct{}, 1), make(chan int, 1)
	b, key, lost, first := c.b, c.req.Key, c.lost, c.ahead == nil && !c.legacy
	c.freed = freed
	go func() {
		defer func() { wake <- struct{}{} }()
		for {
			select {
			case <-wctx.Done():
				return
			case <-lost:
				return
			case wr, ok := <-ch:
				// A deletion (puts are filtered out), or compacted,
				// cancelled by the server...: read again, or take the
				// slot deleted when first in line.
				if !ok || wr.Canceled || wr.Err() != nil {
					return
				}
				if len(wr.Events) > 0 {
					if i, ok := b.slotIndex(key, string(wr.Events[0].Kv.Key)); first && ok {
						freed <- i
					}
					return
				}
			}
		}
	}()
	return lock.Retry{Wake: wake, After: fallbackPoll}, nil
}

// Leave implements lock.Contender: out of the line (revoking our lease
// deletes our key).
func (c *contender) Leave() {
	c.stopWatch()
	c.dropPlace(context.Background())
	c.pending = nil
}

// dropPlace leaves the line: our key goes with our lease.
func (c *contender) dropPlace(ctx context.Context) {
	c.stopKeepAlive()
	if c.e != nil {
		c.b.cleanup(ctx, c.e)
	}
	c.e, c.ahead, c.lost = nil, nil, nil
}

// placeLost: the keep-alive of our place found our lease gone (with no
// keep-alive, lost is nil and never ready).
func (c *contender) placeLost() bool {
	select {
	case <-c.lost:
		return true
	default:
		return false
	}
}

func (c *contender) stopWatch() {
	if c.unwatch != nil {
		c.unwatch()
		c.unwatch = nil
	}
}

func (c *contender) startKeepAlive(ctx context.Context) {
	kactx, cancel := context.WithCancel(ctx)
	lost := make(chan struct{})
	done := make(chan struct{})
	id, ttl := c.e.id, time.Duration(c.e.rec.TTLms)*time.Millisecond
	go func() {
		defer close(done)
		c.b.keepAlive(kactx, id, ttl, lost)
	}()
	c.lost = lost
	c.kaStop = func() { cancel(); <-done }
}

func (c *contender) stopKeepAlive() {
	if c.kaStop != nil {
		c.kaStop()
		c.kaStop = nil
	}
}
