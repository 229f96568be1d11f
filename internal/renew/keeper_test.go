package renew

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
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
	l, err := lock.TryOnce(ctx, b, lock.Request{Key: "k", TTL: 30 * time.Second, Owner: "me"})
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
	l, err := lock.TryOnce(ctx, b, lock.Request{Key: "k", TTL: time.Second, Owner: "me"})
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

// fakeClock is a Clock whose suspended time the test sets: the monotonic
// clock (the keeper's timers) stands still for what the test adds, while
// the boot-time clock counts it, as across a real suspend.
type fakeClock struct{ suspended atomic.Int64 }

func (c *fakeClock) Suspended() time.Duration { return time.Duration(c.suspended.Load()) }
func (c *fakeClock) suspend(d time.Duration)  { c.suspended.Add(int64(d)) }

// countingLease counts the renewals of a real lease.
type countingLease struct {
	lock.Lease
	renewals atomic.Int64
}

func (l *countingLease) Renew(ctx context.Context) error {
	l.renewals.Add(1)
	return l.Lease.Renew(ctx)
}

// After a suspend longer than what was left of the lease, the keeper
// reports the loss at once (within one SuspendCheck), with the SIGKILL
// due now: the engine's TTL ran on while the monotonic clock stood still,
// so another holder may have the lock. Before the fix the keeper trusted
// validUntil and renewed on as if nothing had happened.
func TestKeeperSuspendPastTheLeaseStopsAtOnce(t *testing.T) {
	tm := Timing{TTL: 3 * time.Second, KillGrace: time.Second}
	clock := &fakeClock{}
	k := start(fileLease(t, tm.TTL), tm, nil, clock)
	defer k.Stop()
	clock.suspend(5 * time.Second)
	resumed := time.Now()
	select {
	case loss := <-k.Lost():
		if got := time.Since(resumed); got > tm.SuspendCheck()+500*time.Millisecond {
			t.Errorf("loss reported %s after the resume; the keeper checks every %s", got.Round(time.Millisecond), tm.SuspendCheck())
		}
		if loss.KillAt.After(time.Now()) {
			t.Errorf("KillAt is %s from now, want now: the lease may have expired", time.Until(loss.KillAt).Round(time.Millisecond))
		}
		if !strings.Contains(loss.Err.Error(), "suspended for 5s") {
			t.Errorf("loss reason %q does not say the machine was suspended for 5s", loss.Err)
		}
	case <-time.After(tm.TTL):
		t.Fatal("no loss reported within a TTL of a 5s suspend of a 3s lease")
	}
}

// A suspend shorter than the margin shortens validity by what it lasted
// (plus SuspendAllowance) and makes the keeper renew at once instead of
// at its next interval; the renewal succeeds, so nothing is lost.
func TestKeeperShortSuspendRenewsAtOnce(t *testing.T) {
	tm := Timing{TTL: 3 * time.Second, KillGrace: 500 * time.Millisecond}
	clock := &fakeClock{}
	l := &countingLease{Lease: fileLease(t, tm.TTL)}
	k := start(l, tm, nil, clock)
	defer k.Stop()
	clock.suspend(200 * time.Millisecond)
	suspended := time.Now()
	// The regular renewal is due a full interval (1s) after the grant.
	wait.Until(t, tm.Interval()/2, "a renewal right after the resume", func() bool { return l.renewals.Load() > 0 })
	t.Logf("renewed %s after the resume", time.Since(suspended).Round(time.Millisecond))
	// Past 1.5 TTLs a keeper that let the short suspend cost the lease
	// would have reported it.
	select {
	case loss := <-k.Lost():
		t.Fatalf("a 200ms suspend of a 3s lease cost it: %v", loss.Err)
	case <-time.After(tm.TTL * 3 / 2):
	}
}

// A renewal sent before a suspend and answered after it does not count in
// full: its validity runs from when it was sent, and the suspend is
// counted against it too (the keeper records the suspended time with
// each send). Later renewals get no answer, so the loss must come at the
// corrected term time, well before the uncorrected one (2.5s here).
func TestKeeperRenewalAnsweredAfterSuspendCountsIt(t *testing.T) {
	tm := Timing{TTL: 3 * time.Second, KillGrace: 500 * time.Millisecond}
	clock := &fakeClock{}
	l := &firstRenewalHeld{Lease: fileLease(t, tm.TTL), entered: make(chan struct{}, 1), release: make(chan struct{})}
	k := start(l, tm, nil, clock)
	defer k.Stop()
	k.Poke()
	select {
	case <-l.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no renewal sent after Poke")
	}
	clock.suspend(1200 * time.Millisecond)
	close(l.release)
	resumed := time.Now()
	select {
	case loss := <-k.Lost():
		t.Logf("lost %s after the resume: %v", time.Since(resumed).Round(time.Millisecond), loss.Err)
		if !strings.Contains(loss.Err.Error(), "suspended for 1.2s") {
			t.Errorf("loss reason %q does not say the machine was suspended for 1.2s", loss.Err)
		}
	case <-time.After(time.Second):
		t.Fatal("no loss within 1s: the renewal sent before the suspend was counted in full")
	}
}

// firstRenewalHeld answers its first renewal (with the real lease) only
// once released; later renewals get no answer until their context ends.
type firstRenewalHeld struct {
	lock.Lease
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (l *firstRenewalHeld) Renew(ctx context.Context) error {
	if l.calls.Add(1) == 1 {
		l.entered <- struct{}{}
		<-l.release
		return l.Lease.Renew(ctx)
	}
	<-ctx.Done()
	return ctx.Err()
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
	l, err := lock.TryOnce(context.Background(), b, lock.Request{Key: "k", TTL: ttl, Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
