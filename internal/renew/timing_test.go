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
	if got := tm.TermAt(vu).Sub(s); got != 19698*time.Millisecond {
		t.Errorf("TermAt = %v after s", got)
	}
	if got := tm.KillAt(vu).Sub(s); got != 29398*time.Millisecond {
		t.Errorf("KillAt = %v after s", got)
	}
	if got := tm.Interval(); got != 10*time.Second {
		t.Errorf("Interval = %v", got)
	}
	if got := (Timing{TTL: time.Second}).KillAt(vu); !got.Equal(vu.Add(-10 * time.Millisecond)) {
		t.Errorf("KillAt(1s) = %v before validUntil", vu.Sub(got))
	}
	// The SIGKILL must land before the engine can expire the lease, which
	// happens no earlier than s+TTL.
	if !tm.KillAt(vu).Before(s.Add(tm.TTL)) {
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
	if got := (Timing{TTL: 30 * time.Second, KillGrace: 10 * time.Second}).LostKillAt(now, far); got.Sub(now) != LostGrace {
		t.Errorf("kill-grace 10s: SIGKILL %s after SIGTERM, want %s", got.Sub(now), LostGrace)
	}
	if got := (Timing{TTL: 30 * time.Second, KillGrace: 30 * time.Millisecond}).LostKillAt(now, far); got.Sub(now) != 30*time.Millisecond {
		t.Errorf("kill-grace 30ms: SIGKILL %s after SIGTERM, want 30ms", got.Sub(now))
	}
	tm := Timing{TTL: 2 * time.Second, KillGrace: 500 * time.Millisecond}
	vu := now.Add(50 * time.Millisecond) // KillAt is 20ms before it
	if got := tm.LostKillAt(now, vu); !got.Equal(tm.KillAt(vu)) {
		t.Errorf("near the end of the lease: SIGKILL %s after SIGTERM, want the lease's KillAt (%s)", got.Sub(now), tm.KillAt(vu).Sub(now))
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
