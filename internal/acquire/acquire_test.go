package acquire

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func TestSleep(t *testing.T) {
	const ms = time.Millisecond
	poll := func(cap, after time.Duration) lock.Retry { return lock.Retry{Poll: cap, After: after} }
	for _, tc := range []struct {
		name  string
		r     lock.Retry
		delay time.Duration
		rnd   float64
		want  time.Duration
	}{
		{"jitter middle", poll(time.Second, lock.NoBound), 100 * ms, 0.5, 100 * ms},
		{"jitter low", poll(time.Second, lock.NoBound), 100 * ms, 0, 75 * ms},
		{"jitter high", poll(time.Second, lock.NoBound), 100 * ms, 1, 125 * ms},
		{"capped by Poll", poll(200*ms, lock.NoBound), time.Second, 0.5, 200 * ms},
		{"holder expires first", poll(time.Second, lock.ExpiryBound(40*ms)), time.Second, 0.5, 45 * ms},
		{"holder expired", poll(time.Second, lock.ExpiryBound(0)), time.Second, 0.5, 5 * ms},
		{"holder far off", poll(time.Second, lock.ExpiryBound(time.Hour)), 20 * ms, 0.5, 20 * ms},
		{"no polling: After alone", lock.Retry{After: 300 * ms}, 20 * ms, 0.5, 300 * ms},
		{"no polling, no bound: until woken", lock.Retry{After: lock.NoBound}, 20 * ms, 0.5, -1},
		{"try again at once", lock.Retry{After: 0}, 20 * ms, 0.5, ms},
	} {
		if got := Sleep(tc.r, tc.delay, tc.rnd); got != tc.want {
			t.Errorf("%s: Sleep(%+v, %v, %v) = %v, want %v", tc.name, tc.r, tc.delay, tc.rnd, got, tc.want)
		}
	}
}
