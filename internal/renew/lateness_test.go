package renew

import (
	"testing"
	"time"
)

// The recent lateness is the largest one seen, halving every
// LateHalfLife; a smaller one seen meanwhile does not hide a larger one,
// and a larger one replaces it.
func TestLatenessDecayingPeak(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var l lateness
	if got := l.at(t0); got != 0 {
		t.Fatalf("nothing seen: lateness %v", got)
	}
	l.observe(t0.Add(-40*time.Millisecond), t0) // a timer 40ms late
	if got := l.at(t0); got != 40*time.Millisecond {
		t.Errorf("at once: %v, want 40ms", got)
	}
	if got := l.at(t0.Add(LateHalfLife)); got != 20*time.Millisecond {
		t.Errorf("a half-life later: %v, want 20ms", got)
	}
	l.observe(t0.Add(LateHalfLife-time.Millisecond), t0.Add(LateHalfLife)) // 1ms late
	if got := l.at(t0.Add(2 * LateHalfLife)); got != 10*time.Millisecond {
		t.Errorf("two half-lives later, a smaller one seen meanwhile: %v, want 10ms", got)
	}
	at := t0.Add(2 * LateHalfLife)
	l.observe(at.Add(-25*time.Millisecond), at)
	if got := l.at(at); got != 25*time.Millisecond {
		t.Errorf("a larger one seen: %v, want 25ms", got)
	}
	l.observe(at, at.Add(-time.Millisecond)) // handled "before" due: early, not late
	if got := l.at(at); got != 25*time.Millisecond {
		t.Errorf("an early timer changed the lateness to %v", got)
	}
}
