package file

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func semRequest(key, owner string, limit int) lock.Request {
	return lock.Request{
		Key: key, TTL: 2 * time.Second, Owner: owner, Limit: limit,
		Meta: lock.Meta{Host: "host-" + owner, PID: 1 << 30, User: "u", Command: "./job.sh"},
	}
}

func openTest(t *testing.T) *Backend {
	t.Helper()
	b, err := Open(t.TempDir(), "distlock")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func slotOf(t *testing.T, l lock.Lease) int {
	t.Helper()
	s, ok := l.(lock.Slotted)
	if !ok {
		t.Fatalf("lease %T is not lock.Slotted", l)
	}
	return s.Slot()
}

func TestSemaphoreSlotsTokensAndBusy(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	var leases []lock.Lease
	var last uint64
	for i, owner := range []string{"a", "b", "c"} {
		l, err := lock.TryOnce(ctx, b, semRequest("job", owner, 3))
		if err != nil {
			t.Fatalf("acquire %s: %v", owner, err)
		}
		if got := slotOf(t, l); got != i {
			t.Errorf("%s got slot %d, want %d", owner, got, i)
		}
		if l.Token() <= last {
			t.Errorf("token %d not above %d", l.Token(), last)
		}
		last = l.Token()
		leases = append(leases, l)
	}
	_, err := lock.TryOnce(ctx, b, semRequest("job", "d", 3))
	var busy *lock.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("fourth acquire = %v, want busy", err)
	}
	if busy.Holder.Owner != "a" || busy.Holder.Token != leases[0].Token() {
		t.Errorf("busy names %+v, want the oldest holder a", busy.Holder)
	}
	h, held, err := b.Inspect(ctx, "job")
	if err != nil || !held || h.Owner != "a" {
		t.Errorf("Inspect = %+v %v %v, want held by a", h, held, err)
	}

	// The lowest free slot is taken, with a token above all earlier ones.
	if err := leases[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := lock.TryOnce(ctx, b, semRequest("job", "d", 3))
	if err != nil {
		t.Fatal(err)
	}
	if slotOf(t, l) != 1 || l.Token() <= last {
		t.Errorf("d: slot %d token %d, want slot 1 and a token above %d", slotOf(t, l), l.Token(), last)
	}
	leases[1] = l

	// Everyone must agree on the limit; a mutex is refused too.
	_, err = lock.TryOnce(ctx, b, semRequest("job", "e", 5))
	var mm *lock.LimitMismatchError
	if !errors.As(err, &mm) || mm.Have != 3 || mm.Want != 5 || !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("acquire with limit 5 = %v, want a limit mismatch (have 3)", err)
	}
	_, err = lock.TryOnce(ctx, b, semRequest("job", "f", 1))
	if !errors.As(err, &mm) || mm.Have != 3 || mm.Want != 1 {
		t.Errorf("mutex acquire on a held semaphore = %v, want a limit mismatch (have 3, want 1)", err)
	}

	for _, l := range leases {
		if err := l.Renew(ctx); err != nil {
			t.Errorf("renew slot %d: %v", slotOf(t, l), err)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("release slot %d: %v", slotOf(t, l), err)
		}
	}
	if _, held, _ := b.Inspect(ctx, "job"); held {
		t.Error("Inspect says held after every slot was released")
	}
	// Free again: a mutex may use the key, and then a semaphore may not.
	m, err := lock.TryOnce(ctx, b, semRequest("job", "g", 1))
	if err != nil {
		t.Fatal(err)
	}
	if m.Token() <= l.Token() {
		t.Errorf("mutex token %d not above the semaphore's %d", m.Token(), l.Token())
	}
	_, err = lock.TryOnce(ctx, b, semRequest("job", "h", 3))
	if !errors.As(err, &mm) || mm.Have != 1 {
		t.Errorf("semaphore acquire on a held mutex = %v, want a limit mismatch (have 1)", err)
	}
	m.Release(ctx)
}

func TestSemaphoreDeadHolderFreesItsSlot(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	l0, err := lock.TryOnce(ctx, b, semRequest("k", "a", 2))
	if err != nil {
		t.Fatal(err)
	}
	l1, err := lock.TryOnce(ctx, b, semRequest("k", "b", 2))
	if err != nil {
		t.Fatal(err)
	}
	// The process holding slot 0 dies: the kernel drops its flocks.
	for _, f := range storeOf(l0).files {
		f.Close()
	}
	l, err := lock.TryOnce(ctx, b, semRequest("k", "c", 2))
	if err != nil {
		t.Fatalf("acquire after a holder died: %v", err)
	}
	if slotOf(t, l) != 0 {
		t.Errorf("got slot %d, want the dead holder's slot 0", slotOf(t, l))
	}
	l.Release(ctx)
	l1.Release(ctx)
}

func TestSemaphoreBreak(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	var ls []lock.Lease
	for _, o := range []string{"a", "b", "c"} {
		l, err := lock.TryOnce(ctx, b, semRequest("brk", o, 3))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	// A token no holder has: left alone, the oldest is named.
	_, err := b.Break(ctx, "brk", 12345)
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder.Owner != "a" {
		t.Fatalf("break with a stale token = %v", err)
	}
	// --token of the middle holder breaks that one only.
	h, err := b.Break(ctx, "brk", ls[1].Token())
	if err != nil || h.Owner != "b" {
		t.Fatalf("break token of b = %+v, %v", h, err)
	}
	if err := ls[1].Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("renew of the broken slot = %v, want ErrNotHeld", err)
	}
	for _, i := range []int{0, 2} {
		if err := ls[i].Renew(ctx); err != nil {
			t.Errorf("renew of slot %d = %v", i, err)
		}
	}
	// No token: every holder is broken.
	if h, err := b.Break(ctx, "brk", 0); err != nil || h.Owner != "a" {
		t.Fatalf("break all = %+v, %v", h, err)
	}
	// Right after, the broken holders have not let go of their flocks yet
	// (they are stopped, say): only a slot with a holder record is held, so
	// a second break breaks nothing, with or without a token.
	for _, tok := range []uint64{0, ls[0].Token()} {
		if h, err := b.Break(ctx, "brk", tok); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("second break (token %d) before the holders let go = %+v, %v, want ErrNotHeld", tok, h, err)
		}
	}
	for i, l := range ls {
		if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("renew of slot %d after break-all = %v, want ErrNotHeld", i, err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("release of slot %d after break-all = %v, want ErrNotHeld", i, err)
		}
	}
	if _, err := b.Break(ctx, "brk", 0); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("break of a free semaphore = %v, want ErrNotHeld", err)
	}
}

// TestSemaphoreConcurrent: many goroutines (each with its own flocks, as
// separate processes would have) never hold more than the limit at once,
// and the slots in use are distinct.
func TestSemaphoreConcurrent(t *testing.T) {
	b := openTest(t)
	const limit, workers, rounds = 3, 8, 15
	var mu sync.Mutex
	inUse := map[int]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; {
				l, err := lock.TryOnce(context.Background(), b, semRequest("conc", string(rune('a'+w)), limit))
				if errors.Is(err, lock.ErrHeld) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				s := l.(lock.Slotted).Slot()
				mu.Lock()
				if inUse[s] || len(inUse) >= limit || s >= limit {
					mu.Unlock()
					errs <- errors.New("slot overlap or over the limit")
					return
				}
				inUse[s] = true
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				delete(inUse, s)
				mu.Unlock()
				if err := l.Release(context.Background()); err != nil {
					errs <- err
					return
				}
				r++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSemaphoreSlotFilesDoNotCollideWithKeys(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	// The mutex of "x.slot0" and slot 0 of the semaphore "x" are different locks.
	m, err := lock.TryOnce(ctx, b, semRequest("x.slot0", "a", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	l, err := lock.TryOnce(ctx, b, semRequest("x", "b", 2))
	if err != nil {
		t.Fatalf("semaphore x while x.slot0 is held: %v", err)
	}
	if slotOf(t, l) != 0 {
		t.Errorf("slot %d, want 0", slotOf(t, l))
	}
	l.Release(ctx)
	if slot0, _ := b.keyPaths("x").semSlot(0); !fileExists(slot0) {
		t.Errorf("%s missing", slot0)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// A hold lets go of its flocks, so only its record keeps the key, in either
// mode: a mutex kept by a hold refuses a semaphore (limit 1 in use) and a
// mutex (busy, naming the hold), and a slot kept by a hold refuses a mutex
// and another limit (limit 2 in use) but leaves its other slot free.
func TestHoldsKeepTheOtherModeOut(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	var mm *lock.LimitMismatchError
	var busy *lock.BusyError
	m, err := lock.TryOnce(ctx, b, semRequest("m", "a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Hold(ctx, time.Minute, lock.HoldMinHold); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.TryOnce(ctx, b, semRequest("m", "b", 2)); !errors.As(err, &mm) || mm.Have != 1 || mm.Want != 2 {
		t.Errorf("semaphore beside a kept mutex = %v, want limit 1 in use", err)
	}
	if _, err := lock.TryOnce(ctx, b, semRequest("m", "c", 1)); !errors.As(err, &busy) || busy.Holder.Token != m.Token() || busy.Holder.Hold != lock.HoldMinHold {
		t.Errorf("mutex beside a kept mutex = %v, want busy naming the hold", err)
	}

	s, err := lock.TryOnce(ctx, b, semRequest("s", "a", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(ctx, time.Minute, lock.HoldMinHold); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 3} {
		if _, err := lock.TryOnce(ctx, b, semRequest("s", "b", limit)); !errors.As(err, &mm) || mm.Have != 2 || mm.Want != limit {
			t.Errorf("limit %d beside a kept slot = %v, want limit 2 in use", limit, err)
		}
	}
	l, err := lock.TryOnce(ctx, b, semRequest("s", "c", 2))
	if err != nil || slotOf(t, l) != 1 {
		t.Fatalf("the other slot beside a kept one = %v, %v; want slot 1", l, err)
	}
	l.Release(ctx)
}
