package etcd

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

func semReq(key, owner string, limit int, ttl time.Duration) lock.Request {
	r := request(key, owner, ttl)
	r.Limit = limit
	return r
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
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		var ls []lock.Lease
		var last uint64
		for i, o := range []string{"a", "b", "c"} {
			l, err := lock.TryOnce(ctx, b, semReq("job", o, 3, 3*time.Second))
			if err != nil {
				t.Fatalf("acquire %s: %v", o, err)
			}
			if slotOf(t, l) != i || l.Token() <= last {
				t.Errorf("%s: slot %d token %d, want slot %d, token above %d", o, slotOf(t, l), l.Token(), i, last)
			}
			last = l.Token()
			ls = append(ls, l)
		}
		_, err := lock.TryOnce(ctx, b, semReq("job", "d", 3, 3*time.Second))
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Owner != "a" {
			t.Fatalf("fourth acquire = %v, want busy naming a", err)
		}
		if h, held, err := b.Inspect(ctx, "job"); err != nil || !held || h.Owner != "a" || h.Token != ls[0].Token() {
			t.Errorf("Inspect = %+v %v %v, want the oldest holder a", h, held, err)
		}
		var mm *lock.LimitMismatchError
		if _, err := lock.TryOnce(ctx, b, semReq("job", "e", 2, 3*time.Second)); !errors.As(err, &mm) || mm.Have != 3 || mm.Want != 2 {
			t.Errorf("limit 2 on a limit-3 key = %v", err)
		}
		// A mutex contender cannot take the key from the slot holders, and
		// is told which limit is in use.
		if _, err := lock.TryOnce(ctx, b, semReq("job", "m", 1, 3*time.Second)); !errors.As(err, &mm) || mm.Have != 3 || mm.Want != 1 {
			t.Errorf("mutex on a held semaphore = %v, want a limit mismatch (have 3, want 1)", err)
		}
		if err := ls[1].Release(ctx); err != nil {
			t.Fatal(err)
		}
		l, err := lock.TryOnce(ctx, b, semReq("job", "d", 3, 3*time.Second))
		if err != nil || slotOf(t, l) != 1 || l.Token() <= last {
			t.Fatalf("d: %v, want slot 1 with a token above %d", err, last)
		}
		ls[1] = l
		for _, l := range ls {
			if err := l.Renew(ctx); err != nil {
				t.Errorf("renew: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("release: %v", err)
			}
			if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("second release = %v", err)
			}
		}
		if n := queueLen(t, b, "job"); n != 0 {
			t.Errorf("%d keys left under the key's prefix", n)
		}
		// A mutex holder makes semaphore acquirers fail with a mismatch.
		m, err := lock.TryOnce(ctx, b, semReq("job", "m", 1, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.TryOnce(ctx, b, semReq("job", "n", 3, 3*time.Second)); !errors.As(err, &mm) || mm.Have != 1 {
			t.Errorf("semaphore on a held mutex = %v, want a mismatch (have 1)", err)
		}
		m.Release(ctx)
		if n := queueLen(t, b, "job"); n != 0 {
			t.Errorf("%d keys left under the key's prefix (a failed attempt leaked?)", n)
		}
	})
}

func TestSemaphoreExpiredHolderFreesItsSlot(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		dead, err := lock.TryOnce(ctx, b, semReq("exp", "dead", 2, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		live, err := lock.TryOnce(ctx, b, semReq("exp", "live", 2, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// A waiter gets the dead holder's slot once its lease expires.
		l, err := waitFor(ctx, b, semReq("exp", "w", 2, 3*time.Second), nil)
		if err != nil {
			t.Fatal(err)
		}
		if slotOf(t, l) != slotOf(t, dead) {
			t.Errorf("waiter got slot %d, want the dead holder's %d", slotOf(t, l), slotOf(t, dead))
		}
		if err := dead.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("renew of an expired slot = %v", err)
		}
		l.Release(ctx)
		live.Release(ctx)
	})
}

func TestSemaphoreBreak(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		var ls []lock.Lease
		for _, o := range []string{"a", "b", "c"} {
			l, err := lock.TryOnce(ctx, b, semReq("brk", o, 3, 3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		}
		var busy *lock.BusyError
		if _, err := b.Break(ctx, "brk", 1); !errors.As(err, &busy) || busy.Holder.Owner != "a" {
			t.Fatalf("break with a stale token = %v", err)
		}
		if h, err := b.Break(ctx, "brk", ls[2].Token()); err != nil || h.Owner != "c" {
			t.Fatalf("break c = %+v %v", h, err)
		}
		if err := ls[2].Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("renew of the broken slot = %v", err)
		}
		if err := ls[0].Renew(ctx); err != nil {
			t.Errorf("renew of an unbroken slot = %v", err)
		}
		if h, err := b.Break(ctx, "brk", 0); err != nil || h.Owner != "a" {
			t.Fatalf("break all = %+v %v", h, err)
		}
		for _, l := range ls[:2] {
			if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("renew after break-all = %v", err)
			}
		}
		if _, err := b.Break(ctx, "brk", 0); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("break of a free key = %v", err)
		}
	})
}

func TestSemaphoreConcurrentWaiters(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 60*time.Second)
		const limit, workers, rounds = 3, 6, 4
		var mu sync.Mutex
		inUse := map[int]bool{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					l, err := waitFor(ctx, b, semReq("conc", fmt.Sprint("w", w, "r", r), limit, 3*time.Second), nil)
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
					time.Sleep(5 * time.Millisecond)
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

func TestSemaphoreWaitTimesOutBusy(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		a, err := lock.TryOnce(ctx, b, semReq("to", "a", 2, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c, err := lock.TryOnce(ctx, b, semReq("to", "c", 2, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = waitFor(short, b, semReq("to", "x", 2, 3*time.Second), nil)
		cancel()
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Owner != "a" {
			t.Fatalf("timed-out wait = %v, want busy naming a", err)
		}
		if n := queueLen(t, b, "to"); n != 2 {
			t.Errorf("%d keys under the key's prefix, want the 2 holders", n)
		}
		a.Release(ctx)
		c.Release(ctx)
	})
}

// TestSemaphoreDeadWaiterIsSkipped: a waiter in line whose process died
// (it joined and was never heard of again: nobody keeps its lease alive)
// does not block the waiter behind it: its key expires with its lease and
// the live waiter gets the freed slot. Waiters are never listed as locks.
func TestSemaphoreDeadWaiterIsSkipped(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 30*time.Second)
		var hs []lock.Lease
		for _, o := range []string{"a", "b"} {
			l, err := lock.TryOnce(ctx, b, semReq("dw", o, 2, 3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, l)
		}
		dead := b.Contend(semReq("dw", "dead", 2, time.Second))
		if _, err := dead.Try(ctx); err == nil {
			t.Fatal("dead got a slot of a full semaphore")
		}
		if _, err := dead.Wait(ctx); err != nil { // in line, and never again
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			l, err := waitFor(ctx, b, semReq("dw", "live", 2, 3*time.Second), nil)
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		wait.Until(t, 5*time.Second, "two waiters in line", func() bool {
			n, err := b.QueueLen(ctx, "dw")
			return err == nil && n == 2
		})
		if listed, err := b.List(ctx, ""); err != nil || len(listed) != 1 || listed[0].Key != "dw" {
			t.Fatalf("list with waiters in line = %+v, %v; want the one semaphore", listed, err)
		}
		if err := hs[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the live waiter stayed stuck behind the dead one")
		}
		if n, err := b.QueueLen(ctx, "dw"); err != nil || n != 0 {
			t.Errorf("%d waiters left in line (%v)", n, err)
		}
		hs[1].Release(ctx)
	})
}
