package renew

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// silentLease's renewals get no answer until their context ends, like a
// request to a server (or a record lock) that does not answer; after
// gone is set, the engine answers that the lease is no longer ours.
type silentLease struct {
	lock.Lease
	tries atomic.Int32
	gone  atomic.Bool
}

func (l *silentLease) Renew(ctx context.Context) error {
	l.tries.Add(1)
	if l.gone.Load() {
		return lock.ErrNotHeld
	}
	<-ctx.Done()
	return ctx.Err()
}

// A lease held while its holder lives (the file engine's flock) is not
// lost for want of renewals: three TTLs of unanswered renewals report no
// loss. The engine's answer that it is gone (a break) still does, at once.
func TestKeeperHeldWhileAliveSurvivesSlowRenewals(t *testing.T) {
	tm := Timing{TTL: 600 * time.Millisecond, KillGrace: 200 * time.Millisecond, HeldWhileAlive: true}
	l := &silentLease{Lease: fileLease(t, tm.TTL)}
	k := Start(l, tm, nil)
	defer k.Stop()
	wait.Until(t, 5*time.Second, "three renewals tried", func() bool { return l.tries.Load() >= 3 })
	select {
	case loss := <-k.Lost():
		t.Fatalf("lost a lease held while alive for want of renewals: %v", loss.Err)
	case <-time.After(3 * tm.TTL):
	}
	l.gone.Store(true)
	select {
	case <-k.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("no loss within 5s of the engine saying the lease is gone")
	}
}

// The same lease and renewals without HeldWhileAlive are lost by TermAt:
// the test above would fail for an expiring lease.
func TestKeeperExpiringLeaseLostForWantOfRenewals(t *testing.T) {
	tm := Timing{TTL: 600 * time.Millisecond, KillGrace: 200 * time.Millisecond}
	k := Start(&silentLease{Lease: fileLease(t, tm.TTL)}, tm, nil)
	defer k.Stop()
	select {
	case <-k.Lost():
	case <-time.After(2 * tm.TTL):
		t.Fatal("an expiring lease with no renewal answered was not lost within two TTLs")
	}
}

// A suspend longer than the lease does not cost a lease held while its
// holder lives (docs/GUARANTEES.md, "System suspend"): the flock stayed
// distlock's throughout, so the command is not stopped. (An expiring
// lease is: TestKeeperSuspendPastTheLeaseStopsAtOnce.)
func TestKeeperHeldWhileAliveSurvivesSuspend(t *testing.T) {
	tm := Timing{TTL: 3 * time.Second, KillGrace: time.Second, HeldWhileAlive: true}
	clock := &fakeClock{}
	k := start(fileLease(t, tm.TTL), tm, nil, clock)
	defer k.Stop()
	clock.suspend(5 * time.Second)
	select {
	case loss := <-k.Lost():
		t.Fatalf("a 5s suspend cost a lease held while alive: %v", loss.Err)
	case <-time.After(tm.TTL):
	}
}
