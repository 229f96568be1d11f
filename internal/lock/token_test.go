package lock

import (
	"testing"
	"time"
)

func TestNextToken(t *testing.T) {
	for _, c := range []struct{ last, now, want uint64 }{
		{0, 0, 1}, // nothing known, no clock: still a token
		{0, 1_764_000_000_000_000, 1_764_000_000_000_000},                     // first ever, or the engine lost its data: the clock
		{10, 1_764_000_000_000_000, 1_764_000_000_000_000},                    // old small tokens (a revision): the clock is above
		{1_764_000_000_000_000, 1_764_000_000_000_000, 1_764_000_000_000_001}, // two grants in one µs
		{1_764_000_000_000_500, 1_764_000_000_000_000, 1_764_000_000_000_501}, // a clock behind the last token
	} {
		if got := NextToken(c.last, c.now); got != c.want {
			t.Errorf("NextToken(%d, %d) = %d, want %d", c.last, c.now, got, c.want)
		}
	}
	// Strictly rising whatever the clock does.
	last := uint64(0)
	for _, now := range []uint64{5, 5, 3, 100, 99, 0, 101} {
		next := NextToken(last, now)
		if next <= last {
			t.Fatalf("NextToken(%d, %d) = %d, not above the last", last, now, next)
		}
		last = next
	}
}

func TestClockMicros(t *testing.T) {
	if got := ClockMicros(time.Unix(1_764_000_000, 123_456_789)); got != 1_764_000_000_123_456 {
		t.Errorf("ClockMicros = %d", got)
	}
	if got := ClockMicros(time.Unix(-5, 0)); got != 0 {
		t.Errorf("ClockMicros before 1970 = %d, want 0", got)
	}
}
