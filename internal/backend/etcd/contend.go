package etcd

// Waiting on etcd, for a mutex and a semaphore alike: contenders stand in
// a line in arrival order, each in a key of its own attached to its own
// lease (kept alive while it waits), whose create revision is its place.
// A waiter watches only the deletion of the one just ahead of it (no
// polling, no herd: a handover wakes one waiter), and only the first in
// line takes: in one transaction (step.go) that checks nobody is ahead and
// our key is still ours, grants the token (token.go), and makes us the
// holder, with a KeepAliveOnce sent alongside. A waiter whose process dies
// stops keeping its lease alive: the lease expires after the TTL, its key
// goes with it, and the waiter behind it moves up.
//
// The line differs between the two only in where it stands and what its
// first takes:
//
//   - a mutex: the line is the key's queue "<prefix>/<escaped KEY>/<lease
//     ID in hex>" itself, and its first holds by stamping its own key with
//     the acquisition time and the token. A mutex's first Try joins the
//     queue, taking the lock in the same transaction if the queue is empty
//     (join.go); a try-once then leaves.
//   - a semaphore: the line is "<prefix>/<escaped KEY>#wait/<lease ID in
//     hex>", outside the queue prefix where the slots are (semaphore.go),
//     and its first takes the free slot of its last read: the slot key goes
//     on its lease and its waiter key is deleted, if no slot key was put
//     since that read. A try-once never joins that line (semaphore.go,
//     trySlot); a waiter joins it at its first Wait. The first in line with
//     no slot free watches the slots instead of the one ahead.
//
// If our place is lost while we wait (our lease expired, say during a long
// partition, or someone deleted our key), the next Try joins again at the
// back.

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

// cleanupTimeout caps the fresh context used to leave the line.
const cleanupTimeout = 2 * time.Second

// semFallbackPoll bounds a semaphore waiter's sleep should a watch stay
// silent.
const semFallbackPoll = 5 * time.Second

// Contend implements lock.Backend.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &contender{b: b, req: req, sem: req.Limit > 1, free: -1}
}

// contender is one process's place in a key's line.
type contender struct {
	b   *Backend
	req lock.Request
	sem bool // a semaphore (limit > 1): the line is its waiters'; the first takes a slot

	waiting bool             // Wait was called
	e       *entry           // our place; nil before we join or once lost
	ahead   *mvccpb.KeyValue // the one just ahead in line at the last read; nil: we are first
	readRev int64            // the revision of the last read
	last    uint64           // the token counter at the last read (token.go)
	free    int              // a semaphore's lowest free slot at the last read; -1 none
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
	if c.pending != nil {
		return c.confirm(ctx)
	}
	if c.e != nil && c.placeLost() {
		c.dropPlace(ctx)
	}
	switch {
	case c.e != nil:
		return c.step(ctx)
	case !c.sem:
		return c.joinQueue(ctx)
	case !c.waiting:
		return c.trySlot(ctx) // a try-once never joins the line
	}
	if err := c.joinLine(ctx); err != nil {
		return nil, err
	}
	return nil, c.busy()
}

// Wait implements lock.Contender: keep our lease alive while we wait and
// watch the deletion of the one just ahead of us. A semaphore's waiter
// joins its line at its first Wait, so that it holds its place when Wait
// returns; its first in line watches the slots.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
	if !c.waiting {
		c.waiting = true
		if c.sem && c.e == nil {
			if err := c.joinLine(ctx); err != nil {
				return lock.Retry{}, err
			}
		}
	}
	if c.e == nil || c.again || c.ahead == nil && !c.sem {
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
	watched, after := "", lock.NoBound
	if c.sem {
		after = semFallbackPoll
	}
	if c.ahead != nil {
		watched = string(c.ahead.Key)
	} else {
		watched = c.b.queuePrefix(c.req.Key)
		opts = append(opts, clientv3.WithPrefix())
	}
	ch := c.b.cli.Watch(wctx, watched, opts...)
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
				// A deletion (puts are filtered out), or compacted,
				// cancelled by the server...: read again.
				if !ok || wr.Canceled || wr.Err() != nil || len(wr.Events) > 0 {
					return
				}
			}
		}
	}()
	return lock.Retry{Wake: wake, After: after}, nil
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

func (c *contender) placeLost() bool {
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
