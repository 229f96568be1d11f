package renew

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/lock"
)

// A lease the engine says is no longer ours is reported lost at once (not
// at validUntil), with the SIGKILL due LostGrace later, not kill-grace:
// another holder may be running already. Uses the real file engine: break
// removes the sidecar, Poke makes the keeper look.
func TestKeeperReportsBreakAtOnce(t *testing.T) {
	b, err := file.Open(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := b.TryAcquire(ctx, lock.Request{Key: "k", TTL: 30 * time.Second, Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	tm := Timing{TTL: 30 * time.Second, KillGrace: 2 * time.Second}
	k := Start(l, tm, nil)
	defer k.Stop()
	if _, err := b.Break(ctx, "k", 0); err != nil {
		t.Fatal(err)
	}
	broke := time.Now()
	k.Poke()
	select {
	case loss := <-k.Lost():
		if got := time.Since(broke); got > time.Second {
			t.Errorf("loss reported %s after the break", got)
		}
		if loss.KillAt.After(time.Now().Add(LostGrace)) {
			t.Errorf("KillAt is %s from now, later than LostGrace (%s); kill-grace is %s", time.Until(loss.KillAt).Round(time.Millisecond), LostGrace, tm.KillGrace)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no loss reported within 10s of a break")
	}
}

// A healthy lease is renewed: the keeper reports no loss while validity is
// pushed forward, and Stop ends it cleanly.
func TestKeeperRenewsHealthyLease(t *testing.T) {
	b, err := file.Open(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := b.TryAcquire(ctx, lock.Request{Key: "k", TTL: time.Second, Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	k := Start(l, Timing{TTL: time.Second, KillGrace: 300 * time.Millisecond}, nil)
	// The property is about a span of time: past 1.5 TTLs, a keeper that
	// failed to renew would have reported the loss (at validUntil-grace).
	select {
	case loss := <-k.Lost():
		t.Fatalf("healthy lease reported lost: %v", loss.Err)
	case <-time.After(1500 * time.Millisecond):
	}
	k.Stop()
	if err := l.Release(ctx); err != nil {
		t.Errorf("release after a kept lease: %v", err)
	}
}

// Stop returns only once the renewal in flight has returned: after Stop
// nothing reads the lease, so the caller may change it (Hold).
func TestKeeperStopWaitsForTheRenewalInFlight(t *testing.T) {
	l := &gatedLease{Lease: fileLease(t, 3*time.Second), entered: make(chan struct{}, 1), exited: make(chan struct{})}
	k := Start(l, Timing{TTL: 3 * time.Second, KillGrace: time.Second}, nil)
	k.Poke()
	select {
	case <-l.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no renewal sent after Poke")
	}
	k.Stop()
	select {
	case <-l.exited:
	default:
		t.Fatal("Stop returned while a renewal was still running")
	}
}

// gatedLease's Renew blocks until its context ends, like a request to a
// server that does not answer.
type gatedLease struct {
	lock.Lease
	entered chan struct{}
	exited  chan struct{}
}

func (l *gatedLease) Renew(ctx context.Context) error {
	l.entered <- struct{}{}
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond) // returning takes a moment, as a real client's does
	close(l.exited)
	return ctx.Err()
}

func fileLease(t *testing.T, ttl time.Duration) lock.Lease {
	t.Helper()
	b, err := file.Open(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.TryAcquire(context.Background(), lock.Request{Key: "k", TTL: ttl, Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
