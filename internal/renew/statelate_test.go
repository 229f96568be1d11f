package renew

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// The keeper's state on a loaded machine, on a fake clock: its timers are
// handled late, and the SIGTERM and SIGKILL come sooner for it
// (Timing.Lead), never later than without.

// A timer handled 30ms late on a 2s lease brings the term time forward at
// once (the term timer is re-armed), and the loss that follows has its
// SIGKILL about 3×30ms before validUntil instead of 20ms, still
// kill-grace less the usual lead after the SIGTERM.
func TestStateLateTimersBringTheKillForward(t *testing.T) {
	tm := Timing{TTL: 2 * time.Second, KillGrace: 500 * time.Millisecond}
	const late = 30 * time.Millisecond
	h := newStateHarness(t, tm)
	vu := h.s.validUntil
	due := h.renewAt
	h.now = due.Add(late)
	h.s.fired(due)
	if want := tm.TermAt(vu, late); !h.termAt.Equal(want) {
		t.Fatalf("after a timer %v late the term timer is armed for validUntil%+v, want validUntil%+v", late, h.termAt.Sub(vu), want.Sub(vu))
	}
	if h.s.onRenewDue() {
		t.Fatal("a renewal due lost the lease")
	}
	h.now = h.now.Add(10 * time.Millisecond)
	h.answer(errBlip)
	// No renewal succeeds; the term timer fires when armed (re-armed for
	// what the lateness decayed meanwhile) until the loss.
	for i := 0; len(h.losses) == 0; i++ {
		if i == 10 {
			t.Fatal("no loss after ten term timers")
		}
		h.now = h.termAt
		h.s.fired(h.termAt)
		h.s.onTermDue()
	}
	kill, term := h.losses[0].KillAt, h.now
	if lead := vu.Sub(kill); lead < 85*time.Millisecond || lead > 3*late {
		t.Errorf("SIGKILL validUntil-%v, want about %v (3×%v, decayed a little), not %v", lead, 3*late, late, tm.Lead(0))
	}
	if !kill.Before(tm.KillAt(vu, 0)) {
		t.Errorf("SIGKILL %v after the KillAt without lateness", kill.Sub(tm.KillAt(vu, 0)))
	}
	if g := kill.Sub(term); g != tm.KillGrace-tm.Lead(0) {
		t.Errorf("SIGKILL %v after the loss, want kill-grace less the usual lead (%v)", g, tm.KillGrace-tm.Lead(0))
	}
}

// The term timer itself handled late: its own lateness counts in the
// loss's SIGKILL; and a "not yours" near the end of a lease gets the
// SIGKILL at the lease's KillAt with the lateness seen.
func TestStateLateTermTimerCountsInItsKill(t *testing.T) {
	tm := Timing{TTL: 2 * time.Second, KillGrace: 500 * time.Millisecond}
	const late = 30 * time.Millisecond
	h := newStateHarness(t, tm)
	vu, termAt := h.s.validUntil, h.termAt
	h.now = termAt.Add(late)
	h.s.fired(termAt)
	if !h.s.onTermDue() || len(h.losses) != 1 {
		t.Fatal("the term timer, late, did not lose the lease")
	}
	if got, want := h.losses[0].KillAt, tm.KillAt(vu, late); !got.Equal(want) {
		t.Errorf("SIGKILL validUntil-%v, want validUntil-%v", vu.Sub(got), vu.Sub(want))
	}

	h = newStateHarness(t, tm)
	vu = h.s.validUntil
	h.now = vu.Add(-150 * time.Millisecond) // LostGrace would reach past KillAt
	h.s.fired(h.now.Add(-late))
	h.s.onPoke()
	if !h.answer(lock.ErrNotHeld) {
		t.Fatal("not yours did not lose the lease")
	}
	if got, want := h.losses[0].KillAt, tm.KillAt(vu, late); !got.Equal(want) {
		t.Errorf("not yours near the end: SIGKILL validUntil-%v, want validUntil-%v", vu.Sub(got), vu.Sub(want))
	}
}

// Timers on time change nothing: the term time and the SIGKILL are
// today's (max(δ, TTL/100) before validUntil).
func TestStateTimersOnTimeKeepTheUsualLead(t *testing.T) {
	tm := Timing{TTL: 2 * time.Second, KillGrace: 500 * time.Millisecond}
	h := newStateHarness(t, tm)
	vu, termAt := h.s.validUntil, h.termAt
	h.now = h.renewAt.Add(200 * time.Microsecond)
	h.s.fired(h.renewAt)
	if !h.termAt.Equal(termAt) {
		t.Errorf("a timer 200µs late moved the term timer by %v", h.termAt.Sub(termAt))
	}
	h.now = termAt
	h.s.fired(termAt)
	if !h.s.onTermDue() {
		t.Fatal("no loss at the term time")
	}
	if got := vu.Sub(h.losses[0].KillAt); got != max(Delta, tm.TTL/100) {
		t.Errorf("SIGKILL validUntil-%v, want validUntil-%v", got, max(Delta, tm.TTL/100))
	}
	if errors.Is(h.losses[0].Err, lock.ErrNotHeld) {
		t.Error("the loss says not yours")
	}
}
