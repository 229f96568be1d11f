package consul

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Waiting. A waiter watches one entry: the one just ahead of it (a
// blocking query on that key at its ModifyIndex: it returns once the
// entry is modified, by taking over or holding, or deleted), so that a
// release wakes one waiter and each takeover the next. A semaphore's first
// waiter watches the holders instead: the line, at the index of a read
// that still shows the holders the last Try saw. Meanwhile it keeps its
// session alive itself; the lease's keeper renews it once it holds.

// watchWait bounds one blocking query; the waiter then simply reads again.
const watchWait = time.Minute

// delayPoll is how often a waiter held back by a lock-delay tries again.
const delayPoll = 250 * time.Millisecond

// Wait implements lock.Contender: the session is kept alive from now on,
// and Wake fires when what is ahead of us changed, the watch failed (the
// next Try then finds out why), or the session was lost.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
	if c.alive == nil {
		c.alive, c.stopKA = context.WithCancel(context.WithoutCancel(ctx))
		go c.b.keepAlive(c.alive, c.stopKA, c.sid, c.req.TTL)
	}
	if c.stopWatch != nil {
		c.stopWatch()
	}
	if c.block == nil {
		return lock.Retry{After: delayPoll}, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.alive, cancel)
	c.stopWatch = func() { stop(); cancel() }
	wake, block := make(chan struct{}), c.block
	go func() {
		defer close(wake)
		block(wctx)
	}()
	return lock.Retry{Wake: wake, After: lock.NoBound}, nil
}

// stopWaiting ends the watch and the waiter's keep-alive.
func (c *contender) stopWaiting() {
	for _, stop := range []*context.CancelFunc{&c.stopWatch, &c.stopKA} {
		if *stop != nil {
			(*stop)()
			*stop = nil
		}
	}
	c.alive = nil
}

// blockOnKey returns a wait until kv's ModifyIndex passed the one read
// (or it is gone), the query failed, or ctx ended.
func (b *Backend) blockOnKey(kv *api.KVPair) func(context.Context) {
	return func(ctx context.Context) {
		q := (&api.QueryOptions{WaitIndex: kv.ModifyIndex, WaitTime: watchWait}).WithContext(ctx)
		_ = b.call(func(c *api.Client) error {
			_, _, err := c.KV().Get(kv.Key, q)
			return err
		})
	}
}

// blockOnHolders returns a wait until the line in dir no longer has the
// holders hs, or changed since a read that still showed them.
func (b *Backend) blockOnHolders(dir string, hs []entry) func(context.Context) {
	keys := func(es []entry) (out []string) {
		for _, e := range es {
			out = append(out, e.kv.Key)
		}
		return out
	}
	seen := keys(hs)
	return func(ctx context.Context) {
		var kvs api.KVPairs
		var meta *api.QueryMeta
		err := b.call(func(c *api.Client) (err error) {
			kvs, meta, err = c.KV().List(dir, qo(ctx))
			return err
		})
		if err != nil || !slices.Equal(keys(holders(line(kvs, dir))), seen) {
			return
		}
		q := (&api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: watchWait}).WithContext(ctx)
		_ = b.call(func(c *api.Client) error {
			_, _, err := c.KV().List(dir, q)
			return err
		})
	}
}

// keepAlive renews a waiter's session id every ttl/3 until ctx ends; it
// ends ctx itself (lost) when Consul says the session is gone. Other
// failures wait for the next round.
func (b *Backend) keepAlive(ctx context.Context, lost context.CancelFunc, id string, ttl time.Duration) {
	every := max(ttl/3, 50*time.Millisecond)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(every):
			rctx, cancel := context.WithTimeout(ctx, every)
			gone := errors.Is(b.renewSession(rctx, id), errSessionGone)
			cancel()
			if gone {
				lost()
			}
		}
	}
}
