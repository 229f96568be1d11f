package redis

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/testenv/wait"

	"github.com/alicebob/miniredis/v2"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
	"github.com/distlock/distlock/internal/testenv/server"
)

// testServer is one Redis to test against: miniredis always, a real
// redis-server when on PATH (required with DISTLOCK_TEST_REQUIRE_SERVERS=1).
type testServer struct {
	name string
	addr string
	mini *miniredis.Miniredis // nil for redis-server
}

// expire lets Redis key k expire: miniredis is fast-forwarded by d (it never
// counts TTLs down itself); on a real server we wait until k is gone.
func (s testServer) expire(t *testing.T, b *Backend, k string, d time.Duration) {
	t.Helper()
	if s.mini != nil {
		s.mini.FastForward(d)
		return
	}
	wait.Until(t, 5*time.Second, k+" to expire", func() bool {
		n, err := b.c.Exists(context.Background(), k).Result()
		return err == nil && n == 0
	})
}

// eachRedis runs f against every Redis, in parallel.
func eachRedis(t *testing.T, f func(t *testing.T, s testServer)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		m := miniredis.RunT(t)
		f(t, testServer{name: "miniredis", addr: m.Addr(), mini: m})
	})
	t.Run("redis-server", func(t *testing.T) {
		t.Parallel()
		p, err := server.StartRedis(t.TempDir())
		if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		f(t, testServer{name: "redis-server", addr: p.Addr()})
	})
}

func newTestBackend(t *testing.T, s testServer) *Backend {
	t.Helper()
	cfg, err := ParseURL("redis://" + s.addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "distlock"
	cfg.ConnectTimeout = 5 * time.Second
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func req(key, owner string, limit int, ttl time.Duration) lock.Request {
	return lock.Request{
		Key: key, TTL: ttl, Owner: owner, Limit: limit,
		Meta: lock.Meta{Host: "host-" + owner, PID: 4242, User: "u", Command: "./job.sh", Note: "n"},
	}
}

func slotOf(t *testing.T, l lock.Lease) int {
	t.Helper()
	s, ok := l.(lock.Slotted)
	if !ok {
		t.Fatalf("lease %T is not lock.Slotted", l)
	}
	return s.Slot()
}

func TestSemaphoreSlots(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		var ls []lock.Lease
		var last uint64
		for i, o := range []string{"a", "b", "c"} {
			l, err := lock.TryOnce(ctx, b, req("job", o, 3, 3*time.Second))
			if err != nil {
				t.Fatalf("acquire %s: %v", o, err)
			}
			if slotOf(t, l) != i || l.Token() <= last {
				t.Errorf("%s: slot %d token %d, want slot %d and a token above %d", o, slotOf(t, l), l.Token(), i, last)
			}
			last = l.Token()
			ls = append(ls, l)
		}
		_, err := lock.TryOnce(ctx, b, req("job", "d", 3, 3*time.Second))
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Meta.Host != "host-a" || busy.Holder.Token != ls[0].Token() {
			t.Fatalf("fourth acquire = %v (%+v), want busy naming a", err, busy)
		}
		h, held, err := b.Inspect(ctx, "job")
		if err != nil || !held || h.Meta.Host != "host-a" || h.Token != ls[0].Token() || h.ExpiresIn <= 0 {
			t.Errorf("Inspect = %+v %v %v, want the oldest holder a", h, held, err)
		}

		var mm *lock.LimitMismatchError
		if _, err := lock.TryOnce(ctx, b, req("job", "e", 4, 3*time.Second)); !errors.As(err, &mm) || mm.Have != 3 || mm.Want != 4 {
			t.Errorf("limit 4 on a limit-3 key = %v, want a mismatch", err)
		}
		if _, err := lock.TryOnce(ctx, b, req("job", "f", 1, 3*time.Second)); !errors.As(err, &mm) || mm.Have != 3 || mm.Want != 1 {
			t.Errorf("mutex on a limit-3 key = %v, want a mismatch", err)
		}
		if _, err := waitFor(ctx, b, req("job", "g", 0, 3*time.Second), nil); !errors.As(err, &mm) || mm.Have != 3 {
			t.Errorf("queued mutex on a limit-3 key = %v, want a mismatch", err)
		}

		// Release the oldest: the marker now names the next oldest, and the
		// lowest free slot goes to the next acquirer.
		if err := ls[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		if h, _, _ := b.Inspect(ctx, "job"); h.Meta.Host != "host-b" {
			t.Errorf("Inspect after a's release names %q, want host-b", h.Meta.Host)
		}
		l, err := lock.TryOnce(ctx, b, req("job", "d", 3, 3*time.Second))
		if err != nil || slotOf(t, l) != 0 || l.Token() <= last {
			t.Fatalf("d: %v, want slot 0 with a token above %d", err, last)
		}
		ls[0] = l
		for _, l := range ls {
			if err := l.Renew(ctx); err != nil {
				t.Errorf("renew slot %d: %v", slotOf(t, l), err)
			}
		}
		for _, l := range ls {
			if err := l.Release(ctx); err != nil {
				t.Errorf("release slot %d: %v", slotOf(t, l), err)
			}
			if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("second release = %v, want ErrNotHeld", err)
			}
		}
		if _, held, _ := b.Inspect(ctx, "job"); held {
			t.Error("held after every slot was released")
		}
		// Free: now the key may be a mutex, and then not a semaphore.
		m, err := lock.TryOnce(ctx, b, req("job", "m", 1, 3*time.Second))
		if err != nil || m.Token() <= l.Token() {
			t.Fatalf("mutex after the semaphore: %v (token must rise)", err)
		}
		if _, err := lock.TryOnce(ctx, b, req("job", "n", 3, 3*time.Second)); !errors.As(err, &mm) || mm.Have != 1 {
			t.Errorf("semaphore on a held mutex = %v, want a mismatch (have 1)", err)
		}
		m.Release(ctx)
	})
}

func TestSemaphoreExpiredHolderFreesItsSlot(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		dead, err := lock.TryOnce(ctx, b, req("exp", "dead", 2, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		live, err := lock.TryOnce(ctx, b, req("exp", "live", 2, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.TryOnce(ctx, b, req("exp", "x", 2, 3*time.Second)); !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("full semaphore: %v", err)
		}
		// "dead" stops renewing; "live" renews as a keeper would.
		s.expire(t, b, b.slotKey("exp", slotOf(t, dead), 2), 1100*time.Millisecond)
		if err := live.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if err := dead.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("renew of an expired slot = %v, want ErrNotHeld", err)
		}
		if h, held, _ := b.Inspect(ctx, "exp"); !held || h.Meta.Host != "host-live" {
			t.Errorf("Inspect = %+v, %v; want the live holder", h, held)
		}
		l, err := lock.TryOnce(ctx, b, req("exp", "x", 2, 3*time.Second))
		if err != nil || slotOf(t, l) != slotOf(t, dead) {
			t.Fatalf("acquire after expiry: %v", err)
		}
		l.Release(ctx)
		live.Release(ctx)
		n, err := b.c.Exists(ctx, b.lockKey("exp")).Result()
		if err != nil || n != 0 {
			t.Errorf("marker left behind: %d %v", n, err)
		}
	})
}

func TestSemaphoreBreak(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		var ls []lock.Lease
		for _, o := range []string{"a", "b", "c"} {
			l, err := lock.TryOnce(ctx, b, req("brk", o, 3, 3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		}
		var busy *lock.BusyError
		if _, err := b.Break(ctx, "brk", 1); !errors.As(err, &busy) || busy.Holder.Meta.Host != "host-a" {
			t.Fatalf("break with a stale token = %v", err)
		}
		h, err := b.Break(ctx, "brk", ls[1].Token())
		if err != nil || h.Owner != "b" || h.Token != ls[1].Token() {
			t.Fatalf("break b = %+v %v", h, err)
		}
		if err := ls[1].Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("renew of the broken slot = %v", err)
		}
		if err := ls[0].Renew(ctx); err != nil {
			t.Errorf("renew of an unbroken slot = %v", err)
		}
		if h, err := b.Break(ctx, "brk", 0); err != nil || h.Meta.Host != "host-a" {
			t.Fatalf("break all = %+v %v", h, err)
		}
		for _, l := range ls {
			if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("renew after break-all = %v", err)
			}
		}
		if _, err := b.Break(ctx, "brk", 0); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("break of a free key = %v", err)
		}
		if _, held, _ := b.Inspect(ctx, "brk"); held {
			t.Error("held after break-all")
		}
	})
}

// TestBreakSemaphoreAsBreakHolders: Break goes through lock.BreakHolders,
// so it names a semaphore's holders as the other engines that do.
func TestBreakSemaphoreAsBreakHolders(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		b.prefix = "breaksem-" + t.Name()
		locktest.BreakSemaphore(t, b)
	})
}

func TestSemaphoreWait(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		a, err := lock.TryOnce(ctx, b, req("w", "a", 2, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c, err := lock.TryOnce(ctx, b, req("w", "c", 2, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// A wait that times out is busy, naming the oldest holder.
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = waitFor(short, b, req("w", "x", 2, 3*time.Second), nil)
		cancel()
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Meta.Host != "host-a" {
			t.Fatalf("timed-out wait = %v", err)
		}
		got := make(chan lock.Lease, 1)
		var seen []lock.Holder
		var mu sync.Mutex
		go func() {
			l, err := waitFor(ctx, b, req("w", "d", 2, 3*time.Second), func(h lock.Holder) {
				mu.Lock()
				seen = append(seen, h)
				mu.Unlock()
			})
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		wait.Until(t, 5*time.Second, "the waiter to report the holder", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) > 0
		})
		if err := c.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-got:
			if l == nil || slotOf(t, l) != 1 {
				t.Fatalf("waiter got %v", l)
			}
			l.Release(ctx)
		case <-ctx.Done():
			t.Fatal("the waiter did not get the released slot")
		}
		a.Release(ctx)
	})
}

func TestSemaphoreConcurrent(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		ctx := wait.Context(t, 30*time.Second)
		const limit, workers, rounds = 3, 8, 5
		var mu sync.Mutex
		inUse := map[int]bool{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					l, err := waitFor(ctx, b, req("conc", string(rune('a'+w)), limit, 3*time.Second), nil)
					if err != nil {
						t.Error(err)
						return
					}
					sl := slotOf(t, l)
					mu.Lock()
					if inUse[sl] || len(inUse) >= limit {
						t.Errorf("slot %d given twice, or more than %d holders", sl, limit)
					}
					inUse[sl] = true
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
					mu.Lock()
					delete(inUse, sl)
					mu.Unlock()
					if err := l.Release(ctx); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
	})
}
