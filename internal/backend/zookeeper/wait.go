package zookeeper

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// watchList is what the waiter at place mine watches (exists watches,
// which any change of the node fires): only what can make it next. The
// first waiter (place limit) watches the holders, the first limit places
// (with one place, the node just ahead): any of them leaving frees a
// place. Every later waiter watches the node just ahead: it moves up only
// once that one did, which that one tells by leaving or by taking over (a
// takeover writes its node). A release so wakes one waiter, and each
// takeover the next. The holders' holds bound the first waiter's wait.
func watchList(line []entry, mine, limit int) []entry {
	if mine == limit {
		return line[:limit]
	}
	return line[mine-1 : mine]
}

// Watch implements lock.LineStore: it watches what the last Look noted
// (watchList), bounded by the holders' holds; a watched node already
// gone, or a line that moved under a later waiter, is a Try at once.
func (c *contender) Watch(ctx context.Context) (lock.Retry, error) {
	if c.s == nil || c.node == "" || len(c.watch) == 0 {
		return lock.Retry{After: 0}, nil
	}
	bound := lock.NoBound
	if c.holdLeft >= 0 {
		bound = c.holdLeft + 5*time.Millisecond
	}
	wake := make(chan struct{}, 1)
	if !c.watchAll(ctx, wake) || !c.lineAsRead(ctx) {
		return lock.Retry{After: 0}, nil
	}
	return lock.Retry{Wake: wake, After: bound}, nil
}

// watchAll sets an exists watch on every node of c.watch, at once; each
// one's first event wakes wake. false: one of them is gone already (or
// could not be watched).
func (c *contender) watchAll(ctx context.Context, wake chan struct{}) bool {
	var wg sync.WaitGroup
	var missed atomic.Bool
	for _, e := range c.watch {
		wg.Go(func() {
			ok, ch, err := call2(ctx, func() (bool, <-chan zk.Event, error) {
				ok, _, ch, err := c.s.conn.ExistsW(c.dir + "/" + e.node())
				return ok, ch, err
			})
			if err != nil || !ok {
				missed.Store(true)
				return
			}
			go func() {
				<-ch
				notify(wake) // one wake-up is all a waiter needs
			}()
		})
	}
	wg.Wait()
	return !missed.Load()
}

// lineAsRead: the line is still as the last Look read it (the key node's
// cversion), for a later waiter of a semaphore. Its watch, on the node
// just ahead, was set after that read: had a holder left in between and
// that node taken over, the watch would wait on a holder while another
// place is free. The first waiter watches every holder, and with one
// place the node just ahead of a waiter taking over is the holder itself:
// neither needs the check.
func (c *contender) lineAsRead(ctx context.Context) bool {
	if c.limit == 1 || len(c.watch) == c.limit {
		return true
	}
	ok, st, err := c.s.exists(ctx, c.dir)
	return err == nil && ok && st.Cversion == c.seen
}

// notify sends on ch unless a value is waiting there already.
func notify(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// cleanupTimeout caps the fresh context used to leave the line.
const cleanupTimeout = 2 * time.Second

// Leave implements lock.LineStore: delete our node and end our session
// (which would delete it too), on a fresh short context.
func (c *contender) Leave() {
	if c.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.b.connectTO, cleanupTimeout))
	defer cancel()
	if c.node != "" {
		_ = c.s.remove(ctx, c.dir+"/"+c.node, -1)
	}
	c.s.close(time.Second)
	c.s, c.node = nil, ""
}
