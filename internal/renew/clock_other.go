//go:build !linux

package renew

import "time"

// systemClock cannot tell suspended time apart outside Linux (Go's
// monotonic clock there may or may not count it): Suspended is always 0
// and no correction is made.
type systemClock struct{}

func (systemClock) Suspended() time.Duration { return 0 }
