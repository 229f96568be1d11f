package renew

import (
	"testing"
	"time"
)

func TestTiming(t *testing.T) {
	s := time.Unix(1000, 0)
	tm := Timing{TTL: 30 * time.Second, KillGrace: 10 * time.Second}
	vu := tm.ValidUntil(s)
	if want := s.Add(29700*time.Millisecond - 2*time.Millisecond); !vu.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v", vu.Sub(s), want.Sub(s))
	}
	if got := tm.TermAt(vu, 0).Sub(s); got != 19698*time.Millisecond {
		t.Errorf("TermAt = %v after s", got)
	}
	if got := tm.KillAt(vu, 0).Sub(s); got != 29398*time.Millisecond {
		t.Errorf("KillAt = %v after s", got)
	}
	if got := tm.Interval(); got != 10*time.Second {
		t.Errorf("Interval = %v", got)
	}
	if got := (Timing{TTL: time.Second}).KillAt(vu, 0); !got.Equal(vu.Add(-10 * time.Millisecond)) {
		t.Errorf("KillAt(1s) = %v before validUntil", vu.Sub(got))
	}
	// The SIGKILL must land before the engine can expire the lease, which
	// happens no earlier than s+TTL.
	if !tm.KillAt(vu, 0).Before(s.Add(tm.TTL)) {
		t.Errorf("KillAt is not before the earliest server-side expiry")
	}
}

func TestBackoff(t *testing.T) {
	tm := Timing{TTL: time.Second}
	want := []time.Duration{20, 40, 80, 100, 100}
	for i, w := range want {
		if got := tm.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

func TestDefaultKillGrace(t *testing.T) {
	if got := DefaultKillGrace(time.Minute); got != 10*time.Second {
		t.Errorf("DefaultKillGrace(1m) = %v", got)
	}
	if got := DefaultKillGrace(3 * time.Second); got != time.Second {
		t.Errorf("DefaultKillGrace(3s) = %v", got)
	}
}

// Once the engine said the lease is gone the SIGKILL follows LostGrace
// after the SIGTERM (or kill-grace, if shorter), never after the lease's
// own KillAt.
func TestLostKillAt(t *testing.T) {
	now := time.Unix(1000, 0)
	far := now.Add(time.Minute)
	if got := (Timing{TTL: 30 * time.Second, KillGrace: 10 * time.Second}).LostKillAt(now, far, 0); got.Sub(now) != LostGrace {
		t.Errorf("kill-grace 10s: SIGKILL %s after SIGTERM, want %s", got.Sub(now), LostGrace)
	}
	if got := (Timing{TTL: 30 * time.Second, KillGrace: 30 * time.Millisecond}).LostKillAt(now, far, 0); got.Sub(now) != 30*time.Millisecond {
		t.Errorf("kill-grace 30ms: SIGKILL %s after SIGTERM, want 30ms", got.Sub(now))
	}
	tm := Timing{TTL: 2 * time.Second, KillGrace: 500 * time.Millisecond}
	vu := now.Add(50 * time.Millisecond) // KillAt is 20ms before it
	if got := tm.LostKillAt(now, vu, 0); !got.Equal(tm.KillAt(vu, 0)) {
		t.Errorf("near the end of the lease: SIGKILL %s after SIGTERM, want the lease's KillAt (%s)", got.Sub(now), tm.KillAt(vu, 0).Sub(now))
	}
}

func TestAfterSuspend(t *testing.T) {
	tm := Timing{TTL: 30 * time.Second}
	vu := time.Unix(1000, 0)
	for _, d := range []time.Duration{0, time.Millisecond, SuspendTolerance} {
		if got := tm.AfterSuspend(vu, d); !got.Equal(vu) {
			t.Errorf("AfterSuspend(%s) moved validUntil by %s; within the tolerance it must not", d, got.Sub(vu))
		}
	}
	if got := tm.AfterSuspend(vu, 5*time.Second); got.Sub(vu) != -5*time.Second-SuspendAllowance {
		t.Errorf("AfterSuspend(5s) moved validUntil by %s, want -(5s + %s)", got.Sub(vu), SuspendAllowance)
	}
}

func TestSuspendCheck(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Second:            33333333 * time.Nanosecond,
		3 * time.Second:        100 * time.Millisecond,
		30 * time.Second:       250 * time.Millisecond,
		time.Hour:              250 * time.Millisecond,
		300 * time.Millisecond: 20 * time.Millisecond,
	} {
		if got := (Timing{TTL: ttl}).SuspendCheck(); got != want {
			t.Errorf("SuspendCheck(ttl %s) = %s, want %s", ttl, got, want)
		}
	}
}

// The SIGKILL's lead is max(δ, TTL/100, min(k·late, TTL/20)): never less
// than without lateness, k times the lateness in between, capped at
// TTL/20 (and no overflow for a lateness of years).
func TestLeadGrowsWithLateness(t *testing.T) {
	tm := Timing{TTL: 2 * time.Second, KillGrace: 500 * time.Millisecond}
	for _, c := range []struct{ late, want time.Duration }{
		{-time.Second, 20 * time.Millisecond},
		{0, 20 * time.Millisecond},
		{5 * time.Millisecond, 20 * time.Millisecond},
		{10 * time.Millisecond, 30 * time.Millisecond},
		{30 * time.Millisecond, 90 * time.Millisecond},
		{40 * time.Millisecond, 100 * time.Millisecond},
		{time.Hour, 100 * time.Millisecond},
		{forever, 100 * time.Millisecond},
	} {
		if got := tm.Lead(c.late); got != c.want {
			t.Errorf("Lead(%v) at TTL 2s = %v, want %v", c.late, got, c.want)
		}
	}
	if got := (Timing{TTL: 20 * time.Millisecond}).Lead(time.Second); got != Delta {
		t.Errorf("Lead at TTL 20ms = %v, want δ", got)
	}
	vu := time.Unix(1000, 0)
	for late := time.Duration(0); late < 200*time.Millisecond; late += 7 * time.Millisecond {
		if k, k0 := tm.KillAt(vu, late), tm.KillAt(vu, 0); k.After(k0) {
			t.Fatalf("KillAt with %v late is %v after KillAt without", late, k.Sub(k0))
		}
		// SIGTERM moves with the SIGKILL: the command keeps its grace.
		if g := tm.KillAt(vu, late).Sub(tm.TermAt(vu, late)); g != tm.KillGrace-20*time.Millisecond {
			t.Fatalf("with %v late SIGKILL comes %v after SIGTERM, want %v", late, g, tm.KillGrace-20*time.Millisecond)
		}
	}
	// 30ms late: SIGKILL 90ms before validUntil, 70ms sooner than without.
	if got := tm.KillAt(vu, 0).Sub(tm.KillAt(vu, 30*time.Millisecond)); got != 70*time.Millisecond {
		t.Errorf("30ms late brought the SIGKILL %v forward, want 70ms", got)
	}
}

// A kill-grace shorter than the lead: the SIGTERM comes with the SIGKILL,
// not after it (when the loss is reported, the SIGKILL would be late).
func TestTermNeverAfterKill(t *testing.T) {
	tm := Timing{TTL: 2 * time.Second, KillGrace: 5 * time.Millisecond}
	vu := time.Unix(1000, 0)
	for _, late := range []time.Duration{0, 30 * time.Millisecond} {
		if term, kill := tm.TermAt(vu, late), tm.KillAt(vu, late); !term.Equal(kill) {
			t.Errorf("kill-grace 5ms, %v late: SIGTERM %v after SIGKILL", late, term.Sub(kill))
		}
	}
}
