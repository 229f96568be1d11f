package zookeeper

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

func limited(key, owner string, limit int) lock.Request {
	r := request(key, owner, 5*time.Second)
	r.Limit = limit
	return r
}

// fill takes every place of key (limit holders h0, h1, ...).
func fill(t *testing.T, ctx context.Context, b *Backend, key string, limit int) []lock.Lease {
	t.Helper()
	var held []lock.Lease
	for i := range limit {
		l, err := lock.TryOnce(ctx, b, limited(key, fmt.Sprint("h", i), limit))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	return held
}

// lineWaiter is a contender (lock.Line) with its ZooKeeper store in view.
type lineWaiter struct {
	*lock.Line
	st *contender
}

// waiterOf puts a contender for key in line (one busy Try) and returns it.
func waiterOf(t *testing.T, ctx context.Context, b *Backend, key, owner string, limit int) lineWaiter {
	t.Helper()
	req := limited(key, owner, limit)
	st := b.contender(req)
	c := lineWaiter{lock.NewLine(req, st), st}
	t.Cleanup(c.Leave)
	if _, err := c.Try(ctx); err == nil {
		t.Fatalf("%s: not busy", owner)
	}
	return c
}

// waitWake sets c's watches and returns its wake-up channel; a Retry that
// asks for an immediate Try fails the test.
func waitWake(t *testing.T, ctx context.Context, c lineWaiter) <-chan struct{} {
	t.Helper()
	r, err := c.Wait(ctx)
	if err != nil || r.Wake == nil {
		t.Fatalf("wait: %+v %v, want a watch", r, err)
	}
	return r.Wake
}

func woken(t *testing.T, who string, wake <-chan struct{}) {
	t.Helper()
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s was never woken", who)
	}
}

func nodeOf(l lock.Lease) string { return storeOf(l).lock }

// storeOf is the ZooKeeper store of a lease of this engine.
func storeOf(l lock.Lease) *nodeStore { return lock.StoreOf(l).(*nodeStore) }

func wantWatch(t *testing.T, who string, c lineWaiter, want ...string) {
	t.Helper()
	var got []string
	for _, e := range c.st.watch {
		got = append(got, e.node())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s watches %q, want %q", who, got, want)
	}
}

// TestWaitersWatchWhatMakesThemNext: a mutex and a semaphore wait the
// same way. The first waiter watches the holders (with one place, the
// node just ahead), a later waiter the node just ahead; a holder leaving
// wakes the first waiter even when it is not the node just ahead of it,
// and its takeover wakes the next.
func TestWaitersWatchWhatMakesThemNext(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "waitrule")
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			ctx := ctx(t)
			key := fmt.Sprint("k", limit)
			held := fill(t, ctx, b, key, limit)
			var names []string
			for _, l := range held {
				names = append(names, nodeOf(l))
			}
			first := waiterOf(t, ctx, b, key, "first", limit)
			later := waiterOf(t, ctx, b, key, "later", limit)
			wantWatch(t, "the first waiter", first, names...)
			wantWatch(t, "a later waiter", later, first.st.node)
			firstWake, laterWake := waitWake(t, ctx, first), waitWake(t, ctx, later)

			// The oldest holder leaves: with two places it is not the
			// node just ahead of the first waiter.
			if err := held[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			woken(t, "the first waiter", firstWake)
			l, err := first.Try(ctx)
			if err != nil {
				t.Fatalf("the first waiter did not take the free place: %v", err)
			}
			defer l.Release(ctx)
			woken(t, "the later waiter (by the takeover)", laterWake)
			if _, err := later.Try(ctx); err == nil {
				t.Fatal("the later waiter holds with no place free")
			}
			wantWatch(t, "the later waiter, now first", later, append(names[1:], first.st.node)...)
			for _, h := range held[1:] {
				h.Release(ctx)
			}
		})
	}
}

// TestLaterWaiterRereadsMovedLine: a semaphore's later waiter that read
// the line before a holder left and the waiter ahead of it took over must
// not wait on that node alone (it is a holder now, and a place is free
// for nobody else to wake it for): its Wait finds the line moved and
// asks for a Try at once.
func TestLaterWaiterRereadsMovedLine(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "moved")
	ctx := ctx(t)
	held := fill(t, ctx, b, "sem", 2)
	first := waiterOf(t, ctx, b, "sem", "first", 2)
	later := waiterOf(t, ctx, b, "sem", "later", 2) // reads the line now
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := first.Try(ctx)
	if err != nil {
		t.Fatalf("the first waiter did not take the free place: %v", err)
	}
	defer l.Release(ctx)
	r, err := later.Wait(ctx)
	if err != nil || r.Wake != nil || r.After != 0 {
		t.Fatalf("wait after the line moved: %+v %v, want a Try at once", r, err)
	}
	if _, err := later.Try(ctx); err == nil {
		t.Fatal("the later waiter holds with no place free")
	}
	wantWatch(t, "the later waiter, now first", later, nodeOf(held[1]), nodeOf(l))
	held[1].Release(ctx)
}

// TestHoldsExpireForEveryWaiter: holds keep the holders' places until they
// expire; only the first waiter looks at them and bounds its wait by
// them, and the waiters behind it are served in turn all the same, in
// arrival order, for a mutex and a semaphore.
func TestHoldsExpireForEveryWaiter(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "holdwait")
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			ctx := ctx(t)
			key := fmt.Sprint("k", limit)
			held := fill(t, ctx, b, key, limit)
			const n = 3
			got := make(chan int, n)
			for i := range n {
				go func() {
					l, err := acquire.Acquire(ctx, b, limited(key, fmt.Sprint("w", i), limit), acquire.Options{Wait: 15 * time.Second})
					if err != nil {
						t.Errorf("waiter %d: %v", i, err)
						got <- -1
						return
					}
					got <- i
					l.Release(ctx)
				}()
				wait.Until(t, 10*time.Second, "the waiter queues", func() bool {
					n, err := b.QueueLen(ctx, key)
					return err == nil && n == int64(i+1)
				})
			}
			for _, l := range held {
				if err := l.Hold(ctx, time.Second, lock.HoldMinHold); err != nil {
					t.Fatal(err)
				}
			}
			var order []int
			for range n {
				order = append(order, <-got)
			}
			if limit == 1 && fmt.Sprint(order) != "[0 1 2]" {
				t.Fatalf("served in order %v, want arrival order", order)
			}
			if slices.Contains(order, -1) {
				t.FailNow()
			}
		})
	}
}

// TestLostPlaceJoinsAtTheBack: a waiter whose node went (a session
// expired, a break) joins again at the back on its next Try, behind the
// waiter that came after it, and watches that one.
func TestLostPlaceJoinsAtTheBack(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "lostplace")
	ctx := ctx(t)
	held := fill(t, ctx, b, "k", 1)
	defer held[0].Release(ctx)
	first := waiterOf(t, ctx, b, "k", "first", 1)
	later := waiterOf(t, ctx, b, "k", "later", 1)
	lost := first.st.node
	if err := first.st.s.remove(ctx, first.st.dir+"/"+lost, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Try(ctx); err == nil {
		t.Fatal("the waiter that lost its place holds")
	}
	if first.st.node == lost || first.st.node == "" {
		t.Fatalf("the waiter's node is %q after losing %q, want a new one", first.st.node, lost)
	}
	wantWatch(t, "the waiter that lost its place", first, later.st.node)
}
