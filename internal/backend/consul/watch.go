package consul

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"
)

// watchWait bounds one blocking query; the waiter then simply reads again.
const watchWait = time.Minute

// watch returns a channel closed when what the last read put ahead of us
// changed, or the watch failed (the next Try then finds out why), or the
// session was lost. A waiter watches one entry: the one just ahead of it
// (a blocking query on that key at its ModifyIndex: it returns once the
// entry is modified, by taking over or holding, or deleted), so that a
// release wakes one waiter and each takeover the next. A semaphore's first
// waiter watches the holders instead: the line, at the index of a read
// that still shows the holders the last Try saw.
func (c *contender) watch(ctx context.Context) <-chan struct{} {
	wake := make(chan struct{})
	key, index, seen, lost := c.watchKey, c.watchIndex, c.seen, c.lost
	go func() {
		defer close(wake)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if key != "" {
				c.b.blockOnKey(ctx, key, index)
			} else {
				c.b.blockOnHolders(ctx, c.b.lineDir(c.req.Key), seen)
			}
		}()
		select {
		case <-done:
		case <-lost:
		case <-ctx.Done():
		}
	}()
	return wake
}

// blockOnKey returns once key's ModifyIndex passed index (or it is
// gone), the query failed, or ctx ended.
func (b *Backend) blockOnKey(ctx context.Context, key string, index uint64) {
	q := (&api.QueryOptions{WaitIndex: index, WaitTime: watchWait}).WithContext(ctx)
	_ = b.call(func(c *api.Client) error {
		_, _, err := c.KV().Get(key, q)
		return err
	})
}

// blockOnHolders returns once the line's holders are no longer seen, or
// the line changed since a read that still showed them.
func (b *Backend) blockOnHolders(ctx context.Context, dir string, seen []string) {
	var kvs api.KVPairs
	var meta *api.QueryMeta
	err := b.call(func(c *api.Client) error {
		var err error
		kvs, meta, err = c.KV().List(dir, qo(ctx))
		return err
	})
	if err != nil || !slices.Equal(keysOf(holders(line(kvs, dir))), seen) {
		return
	}
	q := (&api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: watchWait}).WithContext(ctx)
	_ = b.call(func(c *api.Client) error {
		_, _, err := c.KV().List(dir, q)
		return err
	})
}
