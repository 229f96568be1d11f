package renew

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

type systemClock struct{}

// bootSupported records once whether CLOCK_BOOTTIME can be read (Linux
// 2.6.39 and later), so that Suspended never mixes real readings with the
// 0 of an unsupported clock.
var bootSupported = sync.OnceValue(func() bool {
	var ts unix.Timespec
	return unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil
})

// Suspended is CLOCK_BOOTTIME - CLOCK_MONOTONIC: the kernel keeps both from
// one timekeeper and adds the time spent suspended to the first only, so
// the difference changes only across a suspend. The boot-time reading is
// bracketed by two monotonic readings and the midpoint used; a bracket
// wider than a millisecond (the thread was preempted between the reads)
// is read again, so that a preemption cannot pass for a suspend.
// A reading that fails (it does not, once the clock is supported) repeats
// the last good one.
func (systemClock) Suspended() time.Duration {
	if !bootSupported() {
		return 0
	}
	for range 5 {
		var m1, b, m2 unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &m1) != nil ||
			unix.ClockGettime(unix.CLOCK_BOOTTIME, &b) != nil ||
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &m2) != nil {
			continue
		}
		lo, hi := time.Duration(m1.Nano()), time.Duration(m2.Nano())
		lastSuspended.Store(int64(max(time.Duration(b.Nano())-(lo+hi)/2, 0)))
		if hi-lo < time.Millisecond {
			break
		}
	}
	return time.Duration(lastSuspended.Load())
}

var lastSuspended atomic.Int64
