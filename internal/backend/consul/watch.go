package consul

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Waiting. A waiter watches only the entry just ahead of it (waitPast),
// so that a release wakes one waiter and each takeover the next; a
// semaphore's first waiter watches the holders (blockOnHolders).
// Meanwhile lock.Line keeps its session alive (Keeper).

// watchWait bounds one blocking query; the waiter then simply reads again.
const watchWait = time.Minute

// delayPoll is how often a waiter held back by a lock-delay tries again.
const delayPoll = 250 * time.Millisecond

// Watch implements lock.LineStore: Wake fires when what is ahead of us
// changed, the watch failed (the next Try then finds out why), or ctx
// ended (lock.Line ends it when our session is lost).
func (w *waiter) Watch(ctx context.Context) (lock.Retry, error) {
	if w.block == nil {
		return lock.Retry{After: delayPoll}, nil
	}
	wake, block := make(chan struct{}), w.block
	go func() {
		defer close(wake)
		block(ctx)
	}()
	return lock.Retry{Wake: wake, After: lock.NoBound}, nil
}

// Keeper implements lock.PlaceKeeper: a renewal of our session.
func (w *waiter) Keeper() func(context.Context) error {
	b, sid := w.b, w.sid
	w.kept = true
	return func(ctx context.Context) error { return b.renewSession(ctx, sid) }
}

// waitPast blocks until a key under prefix is modified or deleted after
// index (a blocking list: Consul answers at once when one already was),
// the query failed, or ctx ended. A line entry's key is the prefix of no
// other key (session IDs have one length).
func (b *Backend) waitPast(ctx context.Context, prefix string, index uint64) {
	_, _, _ = b.list(prefix, (&api.QueryOptions{WaitIndex: index, WaitTime: watchWait}).WithContext(ctx))
}

// blockOnHolders returns a wait until the line in dir no longer has the
// holders hs, or changed since a read that still showed them.
func (b *Backend) blockOnHolders(dir string, hs []entry) func(context.Context) {
	sameKey := func(a, b entry) bool { return a.kv.Key == b.kv.Key }
	return func(ctx context.Context) {
		kvs, meta, err := b.list(dir, qo(ctx))
		if err == nil && slices.EqualFunc(holders(line(kvs, dir)), hs, sameKey) {
			b.waitPast(ctx, dir, meta.LastIndex)
		}
	}
}
