package renew

import "time"

// Clock tells the keeper how long the machine has spent suspended. The
// keeper's deadlines run on Go's monotonic clock, which stops while the
// machine is suspended, but the engine's TTL runs on: after a resume the
// lease may have expired although the monotonic clock says little time
// passed. Comparing two readings of Suspended tells how much time the
// monotonic clock missed in between.
type Clock interface {
	// Suspended is the total time the machine has been suspended since it
	// booted, read to within a millisecond. It is always 0 where the
	// system cannot tell.
	Suspended() time.Duration
}

// SystemClock reads the system's clocks (on Linux, CLOCK_BOOTTIME minus
// CLOCK_MONOTONIC; elsewhere it always says 0).
var SystemClock Clock = systemClock{}
