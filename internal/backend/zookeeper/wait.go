package zookeeper

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Waiting, for a mutex and a semaphore alike (a mutex is the line with
// one place).
//
// A waiter becomes the next to hold only when a node ahead of it leaves,
// so it watches only the nodes whose change can make it that (exists
// watches, which any change of the node fires):
//
//   - the first waiter (place limit) watches the holders, the first limit
//     places: any of them leaving frees a place for it. With one place
//     that is the node just ahead.
//   - every later waiter watches the node just ahead of it: it moves up
//     only once that one did, which that one tells by leaving or by
//     taking over (a takeover writes its node: the token, token.go).
//
// A release so wakes one waiter, which on taking over wakes the next, and
// so on only as far as places changed hands; nobody else hears of it.
// The holders' holds bound the first waiter's wait by their expiry.

// watchList is what the waiter at place mine watches (see above).
func watchList(line []entry, mine, limit int) []string {
	ahead := line[mine-1 : mine]
	if mine == limit {
		ahead = line[:limit]
	}
	names := make([]string, len(ahead))
	for i, e := range ahead {
		names[i] = e.node()
	}
	return names
}

// Wait implements lock.Contender: it watches what the last Try noted
// (watchList); a watched node already gone, or a line that moved under a
// later waiter, is a Try at once.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
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
	for _, name := range c.watch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type r struct {
				ok bool
				ch <-chan zk.Event
			}
			got, err := call(ctx, func() (r, error) {
				ok, _, ch, err := c.s.conn.ExistsW(c.dir + "/" + name)
				return r{ok, ch}, err
			})
			if err != nil || !got.ok {
				missed.Store(true)
				return
			}
			go relay(got.ch, wake)
		}()
	}
	wg.Wait()
	return !missed.Load()
}

// lineAsRead: the line is still as the last Try read it, for a later
// waiter of a semaphore. Its watch, on the node just ahead, was set after
// that read: had a holder left in between and that node taken over, the
// watch would wait on a holder while another place is free. A change of
// the line (a child created or deleted) raises the key node's cversion.
// The first waiter watches every holder, and with one place the node
// just ahead of any waiter taking over is the holder itself: neither
// needs the check (nor its round trip).
func (c *contender) lineAsRead(ctx context.Context) bool {
	if c.limit == 1 || len(c.watch) == c.limit {
		return true
	}
	cv, err := call(ctx, func() (int32, error) {
		_, st, err := c.s.conn.Exists(c.dir)
		if err != nil || st == nil {
			return -1, err
		}
		return st.Cversion, nil
	})
	return err == nil && cv == c.seen
}

// relay passes a one-shot watch's event on to wake (one wake-up is all a
// waiter needs, so a second one is dropped).
func relay(ev <-chan zk.Event, wake chan<- struct{}) {
	<-ev
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Leave implements lock.Contender: delete our node and end our session
// (which would delete it too), on a fresh short context.
func (c *contender) Leave() {
	if c.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.b.connectTO, cleanupTimeout))
	defer cancel()
	if c.node != "" {
		_ = do(ctx, func() error { return c.s.conn.Delete(c.dir+"/"+c.node, -1) })
	}
	c.s.close(time.Second)
	c.s, c.node = nil, ""
}
