package etcd

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// The token is max(the key's counter + 1, the wall clock in µs), not the
// create revision: with the counter far ahead of the clock (a clock
// behind the last token) each grant gives counter + 1, on every path that
// grants: a try-once on a free key, a waiter's takeover, a semaphore slot
// taken at once and by a waiter. With the counter gone (etcd lost its
// data) the token follows the clock. Inspect, the handle and break
// --token see the same number.
func TestTokenFollowsCounterAndClock(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 30*time.Second)
		ahead := lock.ClockMicros(time.Now().Add(24 * time.Hour))
		setCounter := func(key string, v uint64) {
			t.Helper()
			if _, err := b.cli.Put(ctx, b.tokenKey(key), tokenValue(v)); err != nil {
				t.Fatal(err)
			}
		}
		counter := func(key string) uint64 {
			t.Helper()
			resp, err := b.cli.Get(ctx, b.tokenKey(key))
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("counter of %s: %v, %v", key, resp, err)
			}
			v, err := parseCounter(key, resp.Kvs)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}

		// Free key, clock behind the counter.
		setCounter("c", ahead)
		l, err := lock.TryOnce(ctx, b, request("c", "alice", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() != ahead+1 || counter("c") != ahead+1 {
			t.Fatalf("try-once: token %d, counter %d; want both %d", l.Token(), counter("c"), ahead+1)
		}
		if h, ok, err := b.Inspect(ctx, "c"); err != nil || !ok || h.Token != l.Token() || l.Handle().Token != l.Token() {
			t.Fatalf("Inspect %+v %v %v, handle token %d; want token %d", h, ok, err, l.Handle().Token, l.Token())
		}

		// A waiter's takeover, the counter moved ahead meanwhile.
		got := make(chan lock.Lease, 1)
		go func() {
			w, err := waitFor(ctx, b, request("c", "bob", 3*time.Second), nil)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		wait.Until(t, 5*time.Second, "bob to queue", func() bool { return queueLen(t, b, "c") == 2 })
		setCounter("c", ahead+1000)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		w := <-got
		if w == nil || w.Token() != ahead+1001 {
			t.Fatalf("waiter's token %v; want %d", w, ahead+1001)
		}
		if _, err := b.Break(ctx, "c", w.Token()); err != nil {
			t.Fatalf("break --token %d: %v", w.Token(), err)
		}

		// etcd lost the counter: the clock.
		if _, err := b.cli.Delete(ctx, b.tokenKey("c")); err != nil {
			t.Fatal(err)
		}
		before := lock.ClockMicros(time.Now())
		l, err = lock.TryOnce(ctx, b, request("c", "carol", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() < before || l.Token() > lock.ClockMicros(time.Now()) {
			t.Fatalf("token %d with no counter; want the clock at the grant (%d…)", l.Token(), before)
		}
		_ = l.Release(ctx)

		// Semaphore slots: at once, and by a waiter.
		sem := request("s", "s1", 3*time.Second)
		sem.Limit = 2
		setCounter("s", ahead)
		s1, err := lock.TryOnce(ctx, b, sem)
		if err != nil || s1.Token() != ahead+1 {
			t.Fatalf("slot at once: %v, %v; want token %d", s1, err, ahead+1)
		}
		sem.Owner = "s2"
		s2, err := lock.TryOnce(ctx, b, sem)
		if err != nil || s2.Token() != ahead+2 {
			t.Fatalf("second slot: %v, %v; want token %d", s2, err, ahead+2)
		}
		sem.Owner = "s3"
		go func() {
			w, err := waitFor(ctx, b, sem, nil)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		wait.Until(t, 5*time.Second, "s3 in line", func() bool {
			n, err := b.QueueLen(ctx, "s")
			return err == nil && n == 1
		})
		setCounter("s", ahead+500)
		if h, err := b.Break(ctx, "s", s1.Token()); err != nil || h.Token != s1.Token() {
			t.Fatalf("break --token %d: %+v, %v", s1.Token(), h, err)
		}
		w = <-got
		if w == nil || w.Token() != ahead+501 {
			t.Fatalf("slot waiter's token %v; want %d", w, ahead+501)
		}
		_ = w.Release(ctx)
		_ = s2.Release(ctx)
	})
}
