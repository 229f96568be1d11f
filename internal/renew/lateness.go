package renew

import (
	"math"
	"time"
)

// lateness is how late this process's timers have fired of late: the
// largest lateness observed (from a timer's due time to the moment its
// event was handled), halving every LateHalfLife since it was seen. The
// keeper feeds it every timer it handles (renewal, term, suspend check:
// every Timing.SuspendCheck, TTL/30 within 20-250 ms); the SIGKILL, which the supervisor's timer sends
// in the same process under the same load, is brought forward by it
// (Timing.Lead). It reads no clock: the caller says when.
type lateness struct {
	peak time.Duration // the largest lateness seen, as it was then
	seen time.Time     // when peak was seen
}

// observe records that a timer due at due was handled at handled.
func (l *lateness) observe(due, handled time.Time) {
	if d := handled.Sub(due); d > l.at(handled) {
		l.peak, l.seen = d, handled
	}
}

// at is the recent lateness at now: the peak, decayed since it was seen.
func (l *lateness) at(now time.Time) time.Duration {
	if l.peak <= 0 {
		return 0
	}
	age := now.Sub(l.seen)
	if age <= 0 {
		return l.peak
	}
	return time.Duration(float64(l.peak) * math.Exp2(-float64(age)/float64(LateHalfLife)))
}
