package consul

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// waiting puts a holder of "k" on b (for holderTTL) and a contender behind
// it (for waiterTTL) that has tried, found it busy and begun to wait.
func waiting(ctx context.Context, t *testing.T, b *Backend, holderTTL, waiterTTL time.Duration) (lock.Lease, *waiter, lock.Contender, lock.Retry) {
	t.Helper()
	held, err := lock.TryOnce(ctx, b, request("k", "holder", holderTTL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Release(context.Background()) })
	req := request("k", "waiter", waiterTTL)
	w := b.waiter(req)
	c := lock.NewLine(req, w)
	t.Cleanup(c.Leave)
	if _, err := c.Try(ctx); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("waiter's first try: %v, want busy", err)
	}
	r, err := c.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return held, w, c, r
}

// woken waits for r's wake, failing the test after d.
func woken(t *testing.T, r lock.Retry, d time.Duration, why string) {
	t.Helper()
	select {
	case <-r.Wake:
	case <-time.After(d):
		t.Fatalf("the waiter was not woken %s within %s", why, d)
	}
}

// A waiter's lease counts from a renewal sent with its takeover, not from
// when its session was created: a waiter that waited longer than its TTL
// must not take over a lease that is already over by its own count.
func TestWaiterLeaseCountsFromTakeover(t *testing.T) {
	b := open(t, agent(t).Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held, _, c, r := waiting(ctx, t, b, 10*time.Second, 10*time.Second)
	joined := time.Now() // after the waiter's session was created
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	woken(t, r, 10*time.Second, "by the release")
	l, err := c.Try(ctx)
	if err != nil {
		t.Fatalf("waiter's try after the release: %v", err)
	}
	defer l.Release(context.Background())
	if l.Granted().Before(joined) {
		t.Fatalf("the waiter's lease counts from %v before the takeover: from its session's creation", joined.Sub(l.Granted()))
	}
}

// A waiter whose session is destroyed under it is woken by its keep-alive
// (every TTL/3) and joins the line again with a new session.
func TestWaiterRejoinsWhenItsSessionIsGone(t *testing.T) {
	b := open(t, agent(t).Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, w, c, r := waiting(ctx, t, b, 20*time.Second, time.Second)
	old := w.sid
	b.destroy(ctx, old)
	woken(t, r, 5*time.Second, "when its session was destroyed")
	if _, err := c.Try(ctx); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("waiter's try after losing its session: %v, want busy", err)
	}
	if w.sid == "" || w.sid == old {
		t.Fatalf("the waiter did not join again with a new session (%q, was %q)", w.sid, old)
	}
	if n, err := b.QueueLen(ctx, "k"); err != nil || n != 1 {
		t.Fatalf("queue length %d (%v), want the waiter's new entry alone", n, err)
	}
}
