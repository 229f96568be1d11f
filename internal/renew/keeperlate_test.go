package renew

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
)

// slowClock is a Clock whose every reading takes 40ms of the keeper's
// loop, which reads it on every event: the loop falls behind its timers,
// as on a loaded machine.
type slowClock struct{}

func (slowClock) Suspended() time.Duration {
	time.Sleep(40 * time.Millisecond)
	return 0
}

// The keeper's loop feeds the lateness of its timers to the lease's
// arithmetic: renewals get no answer, and the loss's SIGKILL comes more
// than the fixed max(δ, TTL/100) before validUntil, at most TTL/20.
func TestKeeperLateTimersBringTheKillForward(t *testing.T) {
	s := memstore.New()
	tm := Timing{TTL: time.Second, KillGrace: 300 * time.Millisecond}
	l, err := lock.TryOnce(context.Background(), s, lock.Request{Key: "k", TTL: tm.TTL, Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetFaults(memstore.Faults{Stall: true})
	k := start(l, tm, nil, slowClock{})
	defer k.Stop()
	vu := tm.ValidUntil(l.Granted())
	select {
	case loss := <-k.Lost():
		lead := vu.Sub(loss.KillAt)
		if lead < 3*tm.Lead(0) || lead > tm.TTL/20 {
			t.Errorf("SIGKILL validUntil-%v with the loop 40ms behind its timers, want between %v and %v", lead, 3*tm.Lead(0), tm.TTL/20)
		}
	case <-time.After(3 * tm.TTL):
		t.Fatal("no loss reported within 3 TTLs of renewals stalled")
	}
}
