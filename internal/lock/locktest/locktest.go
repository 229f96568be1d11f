// Package locktest is the engine conformance suite: what every
// lock.Backend must do, checked against a real engine. An engine's package
// runs it against itself (see internal/backend/file/conformance_test.go);
// a new engine starts from this suite failing. docs/ARCHITECTURE.md ("The
// engine contract") says the same in words.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
)

// Options describe the engine under test.
type Options struct {
	// Open returns a fresh, empty engine for one test; the suite closes it.
	Open func(t *testing.T) lock.Backend
	// TTL is the lease length the suite uses (default 2s). An engine with a
	// coarse TTL (etcd rounds up to whole seconds) may need more.
	TTL time.Duration
	// Fair: waiters are served in arrival order, for a mutex and for a
	// semaphore's slots alike.
	Fair bool
	// NoSemaphores: the engine refuses Limit > 1 with a usage error
	// (lock.ErrInvalid), which the suite checks instead of semaphores.
	NoSemaphores bool
}

// Run runs every conformance test against the engine.
func Run(t *testing.T, o Options) {
	if o.TTL == 0 {
		o.TTL = 2 * time.Second
	}
	s := suite{o}
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"AcquireRenewRelease", s.acquireRenewRelease},
		{"BusyNamesTheHolder", s.busyNamesTheHolder},
		{"TokensRise", s.tokensRise},
		{"BreakMakesRenewNotOurs", s.breakMakesRenewNotOurs},
		{"BreakWithTokenIsCompareAndDelete", s.breakWithToken},
		{"HoldHandleResume", s.holdHandleResume},
		{"ListHeldKeys", s.listHeldKeys},
		{"WaiterGetsReleasedLock", s.waiterGetsReleasedLock},
		{"WaitEndsBusyAtDeadline", s.waitEndsBusyAtDeadline},
		{"Semaphore", s.semaphore},
		{"SemaphoreSlotHold", s.slotHold},
		{"FairWaitInArrivalOrder", s.fairWait},
		{"FairSemaphoreWaitInArrivalOrder", s.fairSemaphoreWait},
		{"FairTryOnceNeverJumpsTheLine", s.fairTryOnce},
		{"LeaseLeftGoesNegative", s.leaseLeft},
		{"LeaveGivesBackAGrantNotTaken", s.leaveAfterWait},
		{"LedgerPutReplaceDelete", s.ledgerPutReplaceDelete},
		{"LedgerOutlivesTheLock", s.ledgerOutlivesTheLock},
		{"LedgerHoldsAFullLedger", s.ledgerHoldsAFullLedger},
	} {
		t.Run(tc.name, tc.f)
	}
}

type suite struct{ o Options }

func (s suite) open(t *testing.T) lock.Backend {
	t.Helper()
	b := s.o.Open(t)
	t.Cleanup(func() { b.Close() })
	return b
}

func (s suite) req(key, owner string, limit int) lock.Request {
	return lock.Request{
		Key: key, TTL: s.o.TTL, Owner: owner, Limit: limit,
		Meta: lock.Meta{Host: "host-" + owner, PID: 4242, User: "tester", Command: "job.sh", Note: "conformance"},
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t *testing.T, ctx context.Context, b lock.Backend, req lock.Request) lock.Lease {
	t.Helper()
	l, err := lock.TryOnce(ctx, b, req)
	if err != nil {
		t.Fatalf("acquire %s as %s: %v", req.Key, req.Owner, err)
	}
	return l
}

func wantBusy(t *testing.T, err error) *lock.BusyError {
	t.Helper()
	var busy *lock.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("want a *lock.BusyError, got %v", err)
	}
	return busy
}

// wantNotHeld fails the test unless err is lock.ErrNotHeld; what names
// the call that returned it.
func wantNotHeld(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("%s: %v, want lock.ErrNotHeld", what, err)
	}
}

func (s suite) acquireRenewRelease(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	if l.Key() != "k" || l.Owner() != "alice" || l.Token() == 0 {
		t.Fatalf("lease key %q owner %q token %d", l.Key(), l.Owner(), l.Token())
	}
	if l.Granted().IsZero() || time.Since(l.Granted()) > 10*time.Second {
		t.Fatalf("Granted() = %v: must be taken just before the granting request", l.Granted())
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("renew: %v", err)
	}
	h, held, err := b.Inspect(ctx, "k")
	if err != nil || !held {
		t.Fatalf("inspect held lock: held=%v err=%v", held, err)
	}
	if h.Token != l.Token() || h.Meta.Host != "host-alice" || h.Meta.Note != "conformance" {
		t.Fatalf("inspect: %+v", h)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, held, err := b.Inspect(ctx, "k"); err != nil || held {
		t.Fatalf("after release: held=%v err=%v", held, err)
	}
	wantNotHeld(t, "second release", l.Release(ctx))
	wantNotHeld(t, "renew after release", l.Renew(ctx))
}

func (s suite) busyNamesTheHolder(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	defer l.Release(ctx)
	_, err := lock.TryOnce(ctx, b, s.req("k", "bob", 1))
	busy := wantBusy(t, err)
	if busy.Holder.Token != l.Token() || busy.Holder.Meta.Host != "host-alice" {
		t.Fatalf("busy names %+v, want alice's token %d", busy.Holder, l.Token())
	}
	// A try-once leaves nothing behind: once alice releases, bob gets it.
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, ctx, b, s.req("k", "bob", 1)).Release(ctx)
}

func (s suite) tokensRise(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	var last uint64
	for i := range 5 {
		l := mustAcquire(t, ctx, b, s.req("k", fmt.Sprint("o", i), 1))
		if l.Token() <= last {
			t.Fatalf("acquisition %d: token %d not greater than %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Other keys do not disturb a key's order.
	mustAcquire(t, ctx, b, s.req("other", "x", 1)).Release(ctx)
	if l := mustAcquire(t, ctx, b, s.req("k", "again", 1)); l.Token() <= last {
		t.Fatalf("token %d after another key not greater than %d", l.Token(), last)
	}
}

func (s suite) breakMakesRenewNotOurs(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	h, err := b.Break(ctx, "k", 0)
	if err != nil {
		t.Fatalf("break: %v", err)
	}
	if h.Token != l.Token() {
		t.Fatalf("break reported %+v, want token %d", h, l.Token())
	}
	wantNotHeld(t, "renew after break", l.Renew(ctx))
	// The broken holder lets go of what the engine still keeps for it (the
	// file engine's flock, which no one else can take from it).
	wantNotHeld(t, "release after break", l.Release(ctx))
	_, err = b.Break(ctx, "k", 0)
	wantNotHeld(t, "break of a free key", err)
	mustAcquire(t, ctx, b, s.req("k", "bob", 1)).Release(ctx)
}

func (s suite) breakWithToken(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	_, err := b.Break(ctx, "k", l.Token()+1)
	if busy := wantBusy(t, err); busy.Holder.Token != l.Token() {
		t.Fatalf("stale-token break names %+v", busy.Holder)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("a break with another token touched the holder: renew %v", err)
	}
	if _, err := b.Break(ctx, "k", l.Token()); err != nil {
		t.Fatalf("break with the holder's token: %v", err)
	}
	wantNotHeld(t, "renew after break", l.Renew(ctx))
}

func (s suite) holdHandleResume(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	hold := s.o.TTL + time.Second
	if err := l.Hold(ctx, hold, lock.HoldHandle); err != nil {
		t.Fatalf("hold: %v", err)
	}
	h := l.Handle()
	if h.Key != "k" || h.Owner != "alice" || h.Token != l.Token() {
		t.Fatalf("handle %+v", h)
	}
	parsed, err := lock.ParseHandle(h.Encode())
	if err != nil || parsed != h {
		t.Fatalf("handle round trip: %+v, %v", parsed, err)
	}
	insp, held, err := b.Inspect(ctx, "k")
	if err != nil || !held || insp.Hold != lock.HoldHandle || insp.Token != h.Token {
		t.Fatalf("inspect a held lock: %+v held=%v err=%v", insp, held, err)
	}
	_, err = lock.TryOnce(ctx, b, s.req("k", "bob", 1))
	wantBusy(t, err)

	forged := h
	forged.Token++
	_, err = b.Resume(ctx, forged)
	wantNotHeld(t, "resume with a wrong token", err)
	r, err := b.Resume(ctx, h)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if r.Token() != h.Token || r.Owner() != "alice" {
		t.Fatalf("resumed lease token %d owner %q", r.Token(), r.Owner())
	}
	if err := r.Release(ctx); err != nil {
		t.Fatalf("release a resumed lease: %v", err)
	}
	if _, held, err := b.Inspect(ctx, "k"); err != nil || held {
		t.Fatalf("after release: held=%v err=%v", held, err)
	}
	_, err = b.Resume(ctx, h)
	wantNotHeld(t, "resume a released lock", err)
}

func (s suite) listHeldKeys(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	for _, k := range []string{"job:b", "job:a", "other"} {
		l := mustAcquire(t, ctx, b, s.req(k, "o-"+k, 1))
		defer l.Release(ctx)
	}
	freed := mustAcquire(t, ctx, b, s.req("job:freed", "f", 1))
	if err := freed.Release(ctx); err != nil {
		t.Fatal(err)
	}
	keys := func(prefix string) []string {
		hs, err := b.List(ctx, prefix)
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		var ks []string
		for _, h := range hs {
			ks = append(ks, h.Key)
		}
		return ks
	}
	if got := fmt.Sprint(keys("")); got != "[job:a job:b other]" {
		t.Fatalf("list all = %s", got)
	}
	if got := fmt.Sprint(keys("job:")); got != "[job:a job:b]" {
		t.Fatalf("list job: = %s", got)
	}
}

func (s suite) waiterGetsReleasedLock(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	var seen []lock.Holder
	got := make(chan error, 1)
	var waiter lock.Lease
	go func() {
		var err error
		waiter, err = acquire.Acquire(ctx, b, s.req("k", "bob", 1), acquire.Options{
			Wait:     20 * time.Second,
			Progress: func(h lock.Holder) { seen = append(seen, h) },
		})
		got <- err
	}()
	time.AfterFunc(300*time.Millisecond, func() { l.Release(context.Background()) })
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	defer waiter.Release(ctx)
	if waiter.Token() <= l.Token() {
		t.Fatalf("waiter's token %d not greater than %d", waiter.Token(), l.Token())
	}
	if len(seen) == 0 || seen[0].Token != l.Token() {
		t.Fatalf("progress saw %+v, want alice (token %d) first", seen, l.Token())
	}
}

func (s suite) waitEndsBusyAtDeadline(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	l := mustAcquire(t, ctx, b, s.req("k", "alice", 1))
	defer l.Release(ctx)
	start := time.Now()
	_, err := acquire.Acquire(ctx, b, s.req("k", "bob", 1), acquire.Options{Wait: 300 * time.Millisecond})
	if busy := wantBusy(t, err); busy.Holder.Token != l.Token() {
		t.Fatalf("busy at the deadline names %+v", busy.Holder)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 300ms wait took %s", d)
	}
	// The waiter left no place behind: after alice, a try-once gets it.
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, ctx, b, s.req("k", "carol", 1)).Release(ctx)
}

func (s suite) semaphore(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	if s.o.NoSemaphores {
		if _, err := lock.TryOnce(ctx, b, s.req("sem", "s0", 3)); !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("a semaphore on an engine without them: %v, want a usage error", err)
		}
		return
	}
	var ls []lock.Lease
	slots := map[int]bool{}
	var last uint64
	for i := range 3 {
		l := mustAcquire(t, ctx, b, s.req("sem", fmt.Sprint("s", i), 3))
		sl, ok := l.(lock.Slotted)
		if !ok {
			t.Fatalf("a semaphore lease does not implement lock.Slotted")
		}
		if slots[sl.Slot()] || sl.Slot() < 0 || sl.Slot() > 2 {
			t.Fatalf("slot %d given twice or out of range", sl.Slot())
		}
		slots[sl.Slot()] = true
		if l.Token() <= last {
			t.Fatalf("slot token %d not greater than %d", l.Token(), last)
		}
		last = l.Token()
		ls = append(ls, l)
	}
	_, err := lock.TryOnce(ctx, b, s.req("sem", "s3", 3))
	wantBusy(t, err)
	var mm *lock.LimitMismatchError
	if _, err := lock.TryOnce(ctx, b, s.req("sem", "m", 2)); !errors.As(err, &mm) {
		t.Fatalf("another limit: %v, want *lock.LimitMismatchError", err)
	}
	if _, err := lock.TryOnce(ctx, b, s.req("sem", "mutex", 1)); err == nil {
		t.Fatalf("a mutex acquirer got a key held as a semaphore")
	}
	if err := ls[1].Renew(ctx); err != nil {
		t.Fatalf("renew a slot: %v", err)
	}
	if err := ls[1].Release(ctx); err != nil {
		t.Fatalf("release a slot: %v", err)
	}
	l := mustAcquire(t, ctx, b, s.req("sem", "s4", 3))
	if l.Token() <= last {
		t.Fatalf("token %d after a freed slot not greater than %d", l.Token(), last)
	}
	for _, l := range append(ls, l) {
		l.Release(ctx)
	}
}

// slotHold: a semaphore slot kept by Hold (--min-hold with --limit) stays
// taken with no process renewing it, is described as a hold, keeps mutex
// acquirers out, and leaves the other slots to others.
func (s suite) slotHold(t *testing.T) {
	if s.o.NoSemaphores {
		t.Skip("the engine refuses semaphores (Semaphore checks the refusal)")
	}
	b, ctx := s.open(t), ctxT(t)
	kept := mustAcquire(t, ctx, b, s.req("sem", "kept", 2))
	other := mustAcquire(t, ctx, b, s.req("sem", "other", 2))
	if err := kept.Hold(ctx, s.o.TTL+10*time.Second, lock.HoldMinHold); err != nil {
		t.Fatalf("hold a slot: %v", err)
	}
	// The oldest holder describes the semaphore: the kept slot.
	h, held, err := b.Inspect(ctx, "sem")
	if err != nil || !held || h.Token != kept.Token() || h.Hold != lock.HoldMinHold {
		t.Fatalf("inspect a semaphore whose oldest slot is held: %+v held=%v err=%v, want token %d marked %q", h, held, err, kept.Token(), lock.HoldMinHold)
	}
	hs, err := b.List(ctx, "sem")
	if err != nil || len(hs) != 1 || hs[0].Token != kept.Token() || hs[0].Hold != lock.HoldMinHold {
		t.Fatalf("list: %+v, %v; want the kept slot marked %q", hs, err, lock.HoldMinHold)
	}
	_, err = lock.TryOnce(ctx, b, s.req("sem", "third", 2))
	wantBusy(t, err)
	if err := other.Release(ctx); err != nil {
		t.Fatalf("release the other slot: %v", err)
	}
	// Only the kept slot is taken now: one more fits, then it is full again.
	next := mustAcquire(t, ctx, b, s.req("sem", "next", 2))
	if sl, ok := next.(lock.Slotted); !ok || sl.Slot() == kept.(lock.Slotted).Slot() {
		t.Fatalf("a new holder got the kept slot")
	}
	_, err = lock.TryOnce(ctx, b, s.req("sem", "fourth", 2))
	wantBusy(t, err)
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A held slot alone still keeps the key a semaphore in use.
	if _, err := lock.TryOnce(ctx, b, s.req("sem", "mutex", 1)); err == nil {
		t.Fatalf("a mutex acquirer got a key whose slot is held")
	}
	var mm *lock.LimitMismatchError
	if _, err := lock.TryOnce(ctx, b, s.req("sem", "three", 3)); !errors.As(err, &mm) {
		t.Fatalf("another limit while a slot is held: %v, want *lock.LimitMismatchError", err)
	}
	if _, held, err := b.Inspect(ctx, "sem"); err != nil || !held {
		t.Fatalf("the held slot alone: held=%v err=%v", held, err)
	}
	// It can be broken like any holder.
	if _, err := b.Break(ctx, "sem", kept.Token()); err != nil {
		t.Fatalf("break the held slot: %v", err)
	}
	if _, held, err := b.Inspect(ctx, "sem"); err != nil || held {
		t.Fatalf("after breaking the held slot: held=%v err=%v", held, err)
	}
	mustAcquire(t, ctx, b, s.req("sem", "after", 1)).Release(ctx)
}

func (s suite) fairWait(t *testing.T) {
	if !s.o.Fair {
		t.Skip("this engine does not promise arrival order to waiters")
	}
	b, ctx := s.open(t), ctxT(t)
	first := mustAcquire(t, ctx, b, s.req("q", "holder", 1))
	s.waitInOrder(t, ctx, b, 1, first)
}

// fairSemaphoreWait: a semaphore's waiters take the slots in arrival order.
// One slot stays held throughout, so the waiters take the other in turn.
func (s suite) fairSemaphoreWait(t *testing.T) {
	if !s.o.Fair {
		t.Skip("this engine does not promise arrival order to waiters")
	}
	b, ctx := s.open(t), ctxT(t)
	stays := mustAcquire(t, ctx, b, s.req("q", "stays", 2))
	defer stays.Release(ctx)
	first := mustAcquire(t, ctx, b, s.req("q", "holder", 2))
	s.waitInOrder(t, ctx, b, 2, first)
}

// fairTryOnce: while a waiter is in line, a try-once is busy even when the
// lock (or a slot) is free, and the waiter then gets it; a try-once never
// joins the line. For a mutex and a semaphore alike.
func (s suite) fairTryOnce(t *testing.T) {
	if !s.o.Fair {
		t.Skip("this engine does not promise arrival order to waiters")
	}
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			b, ctx := s.open(t), ctxT(t)
			var held []lock.Lease
			for i := range limit {
				held = append(held, mustAcquire(t, ctx, b, s.req("q", fmt.Sprint("h", i), limit)))
			}
			c := b.Contend(s.req("q", "waiter", limit))
			got := false
			defer func() {
				if !got {
					c.Leave()
				}
			}()
			_, err := c.Try(ctx)
			wantBusy(t, err)
			if _, err := c.Wait(ctx); err != nil { // in line from here on
				t.Fatalf("wait: %v", err)
			}
			if err := held[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			_, err = lock.TryOnce(ctx, b, s.req("q", "try-once", limit))
			wantBusy(t, err)
			// The waiter gets its turn (a Try may first find the line moving).
			deadline := time.Now().Add(10 * time.Second)
			for {
				l, err := c.Try(ctx)
				if err == nil {
					got = true
					l.Release(ctx)
					break
				}
				wantBusy(t, err)
				if time.Now().After(deadline) {
					t.Fatalf("the waiter never got the free place: %v", err)
				}
				if _, err := c.Wait(ctx); err != nil {
					t.Fatalf("wait: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, l := range held[1:] {
				l.Release(ctx)
			}
		})
	}
}

// waitInOrder starts waiters for "q" (with limit) one after the other, each
// once the one before it waits, then releases first: each waiter releases
// as soon as it gets the lock, and they must get it in arrival order.
func (s suite) waitInOrder(t *testing.T, ctx context.Context, b lock.Backend, limit int, first lock.Lease) {
	t.Helper()
	const n = 4
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		started := make(chan struct{})
		go func() {
			defer wg.Done()
			l, err := acquire.Acquire(ctx, b, s.req("q", fmt.Sprint("w", i), limit), acquire.Options{
				Wait:     20 * time.Second,
				Progress: func(lock.Holder) { closeOnce(started) },
			})
			closeOnce(started)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.Release(ctx)
		}()
		// The next waiter starts only once this one has been told it waits
		// (it holds its place by then).
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("waiter never waited")
		}
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := fmt.Sprint(order); got != "[0 1 2 3]" {
		t.Fatalf("waiters served in order %s, want arrival order [0 1 2 3]", got)
	}
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// leaseLeft: engines that keep an expired lease's record and can say how
// long ago it expired (LeaseLeft, for tests and tools: the test harness's
// deadbeforeexpiry judges a lease at a child's death with it) read it as
// negative once the lease has expired, and find no lease for another token.
func (s suite) leaseLeft(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	ll, ok := b.(interface {
		LeaseLeft(ctx context.Context, key string, token uint64) (time.Duration, bool, error)
	})
	if !ok {
		t.Skip("the engine does not keep expired leases' records (no LeaseLeft)")
	}
	req := s.req("left", "o", 1)
	req.TTL = 300 * time.Millisecond
	l := mustAcquire(t, ctx, b, req)
	left, found, err := ll.LeaseLeft(ctx, "left", l.Token())
	if err != nil || !found || left <= 0 || left > req.TTL {
		t.Fatalf("live lease: left %v, found %v, %v", left, found, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left, found, err = ll.LeaseLeft(ctx, "left", l.Token())
		if err != nil || !found {
			t.Fatalf("expired lease: found %v, %v", found, err)
		}
		if left < 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %v left 5s after a %v lease", left, req.TTL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, found, err := ll.LeaseLeft(ctx, "left", l.Token()+1); err != nil || found {
		t.Fatalf("another token: found %v, %v", found, err)
	}
}

// leaveAfterWait: a waiter's Wait may take the lock itself (the step that
// joins the line finds it free); if the wait then ends before a Try took
// that lease (its deadline passed in the moment between), Leave must give
// the lock back, not leave it held until its TTL by nobody.
func (s suite) leaveAfterWait(t *testing.T) {
	b, ctx := s.open(t), ctxT(t)
	holder := mustAcquire(t, ctx, b, s.req("gone", "holder", 1))
	req := s.req("gone", "waiter", 1)
	req.TTL = 30 * time.Second // a lease left behind would hold the key that long
	c := b.Contend(req)
	if _, err := c.Try(ctx); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("first try while held: %v, want busy", err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c.Leave()
	deadline := time.Now().Add(3 * time.Second)
	for {
		l, err := lock.TryOnce(ctx, b, s.req("gone", "next", 1))
		if err == nil {
			l.Release(ctx)
			return
		}
		if !errors.Is(err, lock.ErrHeld) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key is still held 3s after the waiter left: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
