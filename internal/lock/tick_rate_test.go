package lock

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestTickRate: two ticks 2 server seconds apart, seen 2s ± 1ms apart
// here, are 0 ± 0.05 % fast; seen 1.9s apart, 5.3 % fast; either way of
// counting.
func TestTickRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	fast, unc := TickRate(Tick{V: 9, Lo: t0, Hi: t0.Add(ms)}, Tick{V: 7, Lo: t0.Add(2 * time.Second), Hi: t0.Add(2*time.Second + ms)})
	if fast < -1e-6 || fast > 1e-6 || unc < 0.00049 || unc > 0.00051 {
		t.Errorf("even clocks: fast %v ± %v, want 0 ± 0.0005", fast, unc)
	}
	for _, vs := range [][2]int64{{9, 7}, {7, 9}} {
		fast, _ = TickRate(Tick{V: vs[0], Lo: t0, Hi: t0}, Tick{V: vs[1], Lo: t0.Add(1900 * ms), Hi: t0.Add(1900 * ms)})
		if fast < 0.052 || fast > 0.053 {
			t.Errorf("%d to %d: server 2s in our 1.9s: fast %v, want 0.0526", vs[0], vs[1], fast)
		}
	}
}

// TestMeasureTickRate: a countdown whose seconds are 0.97 of ours (its
// clock 3.1 % fast) measures so, over the server seconds it spanned (at
// least one step; how many more depends on how wide load makes the
// brackets, and a stall can add a tick); a failed read or an ended
// context is the error.
func TestMeasureTickRate(t *testing.T) {
	start := time.Now()
	countdown := func(context.Context) (int64, error) {
		return 100 - int64(float64(time.Since(start))/(0.97*float64(time.Second))), nil
	}
	fast, unc, secs, err := MeasureTickRate(context.Background(), start.Add(900*time.Millisecond), -1, countdown)
	if want := 1/0.97 - 1; err != nil || math.Abs(fast-want) > unc+0.002 || secs < 2 {
		t.Errorf("a 3.1%% fast countdown: %v ± %v over %ds, %v", fast, unc, secs, err)
	}
	refused := errors.New("refused")
	if _, _, _, err = MeasureTickRate(context.Background(), start, -1, func(context.Context) (int64, error) { return 0, refused }); !errors.Is(err, refused) {
		t.Errorf("a failed read: %v", err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err = MeasureTickRate(ended, time.Now().Add(time.Hour), -1, countdown); !errors.Is(err, context.Canceled) {
		t.Errorf("an ended context: %v", err)
	}
}
