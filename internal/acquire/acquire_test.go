package acquire

import (
	"testing"
	"time"
)

func TestNextPoll(t *testing.T) {
	for _, tc := range []struct {
		delay, expires time.Duration
		r              float64
		want           time.Duration
	}{
		{100 * time.Millisecond, -1, 0.5, 100 * time.Millisecond},
		{100 * time.Millisecond, -1, 0, 75 * time.Millisecond},
		{100 * time.Millisecond, -1, 1, 125 * time.Millisecond},
		{time.Second, 40 * time.Millisecond, 0.5, 45 * time.Millisecond},
		{time.Second, 0, 0.5, 5 * time.Millisecond},
		{20 * time.Millisecond, time.Hour, 0.5, 20 * time.Millisecond},
	} {
		if got := NextPoll(tc.delay, tc.expires, tc.r); got != tc.want {
			t.Errorf("NextPoll(%v, %v, %v) = %v, want %v", tc.delay, tc.expires, tc.r, got, tc.want)
		}
	}
}
