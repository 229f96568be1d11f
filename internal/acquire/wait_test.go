package acquire

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// The wait loop against the in-memory store, on a fake clock: its timers
// fire at once or never (the wait then ends by a wake-up or its context),
// and record what they were asked for; the jitter is fixed at its middle
// (rnd 0.5: ×1). A test moves the world on from the loop's callbacks
// (Progress, Retrying), so nothing depends on how fast anything runs.

type fakeTimers struct {
	mu     sync.Mutex
	fire   bool // each timer fires at once; else never
	asked  []time.Duration
	onTime func(n int) // called with the count of timers asked for so far
}

func (f *fakeTimers) timer(d time.Duration) (<-chan time.Time, func()) {
	f.mu.Lock()
	f.asked = append(f.asked, d)
	n := len(f.asked)
	f.mu.Unlock()
	if f.onTime != nil {
		f.onTime(n)
	}
	c := make(chan time.Time, 1)
	if f.fire {
		c <- time.Time{}
	}
	return c, func() {}
}

func middle() float64 { return 0.5 }

// leaveCounting is the store, counting the contenders' Leave calls.
type leaveCounting struct {
	*memstore.Store
	mu     sync.Mutex
	leaves int
}

func (b *leaveCounting) Contend(req lock.Request) lock.Contender {
	return &countedLeave{Contender: b.Store.Contend(req), b: b}
}

func (b *leaveCounting) left() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leaves
}

type countedLeave struct {
	lock.Contender
	b *leaveCounting
}

func (c *countedLeave) Leave() {
	c.b.mu.Lock()
	c.b.leaves++
	c.b.mu.Unlock()
	c.Contender.Leave()
}

// heldBy opens a store with key k held by owner a for a minute.
func heldBy(t *testing.T) (*leaveCounting, lock.Lease) {
	t.Helper()
	b := &leaveCounting{Store: memstore.New()}
	l, err := lock.TryOnce(context.Background(), b.Store, lock.Request{Key: "k", TTL: time.Minute, Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	return b, l
}

var req = lock.Request{Key: "k", TTL: time.Minute, Owner: "b"}

var errBlip = &lock.UnavailableError{Msg: "connection reset"}

// Busy, then free: the waiter is told of the holder once, and takes the
// lock when it is released (woken, not by a timer).
func TestAcquireBusyThenFree(t *testing.T) {
	b, held := heldBy(t)
	var told []lock.Holder
	opts := Options{Wait: Forever, Progress: func(h lock.Holder) {
		told = append(told, h)
		if err := held.Release(context.Background()); err != nil {
			t.Error(err)
		}
	}}
	l, err := acquire(wait.Context(t, 10*time.Second), b, req, opts, (&fakeTimers{}).timer, middle)
	if err != nil {
		t.Fatalf("a freed lock was not taken: %v", err)
	}
	if l.Owner() != "b" || l.Token() <= held.Token() {
		t.Errorf("took a lease of %s with token %d after %d", l.Owner(), l.Token(), held.Token())
	}
	if len(told) != 1 || told[0].Owner != "a" || told[0].Token != held.Token() {
		t.Errorf("progress told %+v, want the holder a once", told)
	}
	if b.left() != 0 {
		t.Errorf("Leave called %d times by a wait that took the lock", b.left())
	}
}

// Try once (no wait): busy at once, naming the holder, leaving no place.
func TestAcquireTryOnceBusy(t *testing.T) {
	b, held := heldBy(t)
	timers := &fakeTimers{}
	_, err := acquire(wait.Context(t, 10*time.Second), b, req, Options{}, timers.timer, middle)
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder.Token != held.Token() {
		t.Fatalf("try once of a held key: %v, want busy naming its holder", err)
	}
	if b.left() != 1 || len(timers.asked) != 0 {
		t.Errorf("Leave called %d times, %d timers: want 1 and none", b.left(), len(timers.asked))
	}
}

// The wait's deadline passing is busy, naming the last holder seen, and
// the contender leaves.
func TestAcquireDeadlineIsBusyNamingTheHolder(t *testing.T) {
	b, held := heldBy(t)
	_, err := acquire(wait.Context(t, 10*time.Second), b, req, Options{Wait: 100 * time.Millisecond}, (&fakeTimers{}).timer, middle)
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder.Owner != "a" || busy.Holder.Token != held.Token() {
		t.Fatalf("wait past its deadline: %v, want busy naming holder a", err)
	}
	if b.left() != 1 {
		t.Errorf("Leave called %d times on giving up, want 1", b.left())
	}
}

// The caller's cancellation is its own error, not busy, and the
// contender leaves.
func TestAcquireCancelIsItsOwnError(t *testing.T) {
	b, _ := heldBy(t)
	ctx, cancel := context.WithCancel(wait.Context(t, 10*time.Second))
	opts := Options{Wait: time.Hour, Progress: func(lock.Holder) { cancel() }}
	_, err := acquire(ctx, b, req, opts, (&fakeTimers{}).timer, middle)
	var busy *lock.BusyError
	if !errors.Is(err, context.Canceled) || errors.As(err, &busy) {
		t.Fatalf("cancelled wait: %v, want context.Canceled and not busy", err)
	}
	if b.left() != 1 {
		t.Errorf("Leave called %d times on giving up, want 1", b.left())
	}
}

// Once the engine has answered, a transient error is retried with backoff
// (100ms doubling to 2s) and the wait goes on: here the engine fails seven
// tries in a row, then the lock is free.
func TestAcquireTransientAfterFirstAnswerIsRetried(t *testing.T) {
	b, held := heldBy(t)
	var next []time.Duration
	opts := Options{
		Wait: Forever,
		Progress: func(lock.Holder) {
			b.SetFaults(memstore.Faults{Try: errBlip})
			_ = held.Release(context.Background())
		},
		Retrying: func(err error, attempt int, d time.Duration) {
			if !errors.Is(err, errBlip) || attempt != len(next)+1 {
				t.Errorf("Retrying(%v, %d): want the engine's error, attempt %d", err, attempt, len(next)+1)
			}
			if next = append(next, d); len(next) == 7 {
				b.SetFaults(memstore.Faults{})
			}
		},
	}
	l, err := acquire(wait.Context(t, 10*time.Second), b, req, opts, (&fakeTimers{fire: true}).timer, middle)
	if err != nil {
		t.Fatalf("a wait through transient errors: %v", err)
	}
	_ = l.Release(context.Background())
	const ms = time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms}
	if !slices.Equal(next, want) {
		t.Fatalf("retried after %v, want %v", next, want)
	}
}

// Before the engine has answered at all, the same error ends the wait at
// once (the engine is unreachable), and the contender leaves.
func TestAcquireTransientBeforeFirstAnswerEndsAtOnce(t *testing.T) {
	b, _ := heldBy(t)
	b.SetFaults(memstore.Faults{Try: errBlip})
	ctx, cancel := context.WithCancel(wait.Context(t, 10*time.Second))
	defer cancel()
	opts := Options{Wait: Forever, Retrying: func(error, int, time.Duration) {
		t.Error("retried an error before the engine's first answer")
		cancel()
	}}
	timers := &fakeTimers{fire: true}
	_, err := acquire(ctx, b, req, opts, timers.timer, middle)
	if !errors.Is(err, errBlip) {
		t.Fatalf("got %v, want the engine's error", err)
	}
	if b.left() != 1 || len(timers.asked) != 0 {
		t.Errorf("Leave called %d times, %d timers: want 1 and none", b.left(), len(timers.asked))
	}
}

// A wait whose deadline passes while the engine is failing ends with the
// engine's error, not busy: the lock was not seen held meanwhile.
func TestAcquireDeadlineWhileFailingIsTheEnginesError(t *testing.T) {
	b, held := heldBy(t)
	opts := Options{Wait: 100 * time.Millisecond, Progress: func(lock.Holder) {
		b.SetFaults(memstore.Faults{Try: errBlip})
		_ = held.Release(context.Background())
	}}
	_, err := acquire(wait.Context(t, 10*time.Second), b, req, opts, (&fakeTimers{}).timer, middle)
	var busy *lock.BusyError
	if !errors.Is(err, errBlip) || errors.As(err, &busy) {
		t.Fatalf("deadline while the engine fails: %v, want the engine's error", err)
	}
	if b.left() != 1 {
		t.Errorf("Leave called %d times on giving up, want 1", b.left())
	}
}

// The poll backoff starts at 20ms and doubles to the engine's cap (the
// store's 50ms); right after subscribing to releases it tries again at
// once (1ms). The same holder, seen on every try, is told of once.
func TestAcquirePollBackoff(t *testing.T) {
	b, held := heldBy(t)
	timers := &fakeTimers{fire: true, onTime: func(n int) {
		if n == 4 {
			_ = held.Release(context.Background())
		}
	}}
	told := 0
	opts := Options{Wait: Forever, Progress: func(lock.Holder) { told++ }}
	if _, err := acquire(wait.Context(t, 10*time.Second), b, req, opts, timers.timer, middle); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	if !slices.Equal(timers.asked, want) {
		t.Errorf("paused %v, want %v", timers.asked, want)
	}
	if told != 1 {
		t.Errorf("progress told of the same holder %d times", told)
	}
}
