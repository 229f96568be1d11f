package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/testenv/wait"

	"github.com/distlock/distlock/internal/lock"
)

func queueLen(t *testing.T, b *Backend, key string) int64 {
	t.Helper()
	n, err := b.c.ZCard(context.Background(), b.queueKey(key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestQueueArrivalOrder(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 30*time.Second)
		h, err := lock.TryOnce(ctx, b, req("fair", "holder", 1, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range n {
			wb := newTestBackend(t, s) // one connection set per waiter, as per process
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := waitFor(ctx, wb, req("fair", fmt.Sprint("w", i), 0, 3*time.Second), nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}()
			wait.Until(t, 5*time.Second, fmt.Sprintf("%d waiters queued", i+1), func() bool { return queueLen(t, b, "fair") == int64(i+1) })
		}
		// Herd-free: only the first in line listens for releases.
		wait.Until(t, 5*time.Second, "one listener on the release channel", func() bool {
			m, err := b.c.PubSubNumSub(ctx, b.channel("fair")).Result()
			return err == nil && m[b.channel("fair")] == 1
		})
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, w := range order {
			if i != w {
				t.Fatalf("waiters got the lock in the order %v, want 0..%d", order, n-1)
			}
		}
		if len(order) != n {
			t.Fatalf("only %d of %d waiters got the lock", len(order), n)
		}
		if q := queueLen(t, b, "fair"); q != 0 {
			t.Errorf("queue holds %d entries after everyone left", q)
		}
	})
}

// TestQueuePrunesDeadWaiter: a waiter that stops refreshing its place (its
// process died) is dropped, and the next waiter gets the lock, or the freed
// slot of a semaphore.
func TestQueuePrunesDeadWaiter(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		for _, limit := range []int{1, 2} {
			t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
				b := newTestBackend(t, s)
				key := fmt.Sprint("prune", limit)
				ctx := wait.Context(t, 30*time.Second)
				var hs []lock.Lease
				for i := range limit {
					h, err := lock.TryOnce(ctx, b, req(key, fmt.Sprint("holder", i), limit, 3*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					hs = append(hs, h)
				}
				// "dead" joins the queue first, with a place lasting 300ms, and is
				// never heard of again.
				// Busy and first in line: told when the soonest slot frees up.
				if _, freeIn, err := b.queueStep(ctx, req(key, "dead", limit, 3*time.Second), 300*time.Millisecond); !errors.Is(err, lock.ErrHeld) || freeIn < 0 {
					t.Fatalf("dead joins: %v %v", freeIn, err)
				}
				got := make(chan error, 1)
				go func() {
					l, err := waitFor(ctx, b, req(key, "live", limit, 3*time.Second), nil)
					if err == nil {
						err = l.Release(ctx)
					}
					got <- err
				}()
				wait.Until(t, 5*time.Second, "two waiters queued", func() bool { return queueLen(t, b, key) == 2 })
				if err := hs[0].Release(ctx); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-got:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the live waiter stayed stuck behind the dead one")
				}
				if _, err := b.c.ZScore(ctx, b.queueKey(key), "dead").Result(); err == nil {
					t.Error("the dead waiter is still queued")
				}
				for _, h := range hs[1:] {
					h.Release(ctx)
				}
			})
		}
	})
}

// TestTryOnceDoesNotJumpTheQueue: with a live waiter queued, a try-once is
// busy even though the lock itself is free at that moment.
func TestTryOnceDoesNotJumpTheQueue(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		h, err := lock.TryOnce(ctx, b, req("jump", "holder", 1, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// A waiter in line whose next step has not come yet when the lock
		// is released.
		if _, freeIn, err := b.queueStep(ctx, req("jump", "next", 0, 3*time.Second), 10*time.Second); !errors.Is(err, lock.ErrHeld) || freeIn < 0 {
			t.Fatalf("next joins: %v %v", freeIn, err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = lock.TryOnce(ctx, b, req("jump", "try", 1, 3*time.Second))
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Meta.Host != "host-next" || busy.Holder.Meta.PID != 4242 {
			t.Fatalf("try-once past a queued waiter = %v, want busy naming the waiter", err)
		}
		b.leaveQueue(ctx, req("jump", "next", 0, 3*time.Second))
		l2, err := lock.TryOnce(ctx, b, req("jump", "try", 1, 3*time.Second))
		if err != nil {
			t.Fatalf("try-once with nobody queued: %v", err)
		}
		l2.Release(ctx)
	})
}

func TestQueueTimeoutLeaves(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		h, err := lock.TryOnce(ctx, b, req("to", "holder", 1, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err = waitFor(short, b, req("to", "w", 0, 3*time.Second), nil)
		cancel()
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Owner != "holder" {
			t.Fatalf("timed-out wait = %v, want busy naming the holder", err)
		}
		if q := queueLen(t, b, "to"); q != 0 {
			t.Errorf("queue holds %d entries after the wait ended", q)
		}
		// Cancelled (not timed out): ctx's error, and the queue is left too.
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := waitFor(cctx, b, req("to", "c", 0, 3*time.Second), nil)
			done <- err
		}()
		wait.Until(t, 5*time.Second, "the waiter to queue", func() bool { return queueLen(t, b, "to") == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled wait = %v", err)
		}
		if q := queueLen(t, b, "to"); q != 0 {
			t.Errorf("queue holds %d entries after the wait was cancelled", q)
		}
		h.Release(ctx)
	})
}
