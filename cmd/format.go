package cmd

import (
	"strconv"
	"time"
	"unicode"

	"github.com/distlock/distlock/internal/lock"
)

// expiring reports a lease whose renewals are overdue: its holder renews
// every ttl/3, so a healthy lease never has much less than two thirds of
// its TTL left; below a third, the holder is stuck, partitioned or dying.
func expiring(h lock.Holder) bool {
	// A hold (min-hold, handle) is not renewed by design: it runs out on
	// purpose, so it is not flagged.
	return h.Hold == "" && h.TTL > 0 && h.ExpiresIn >= 0 && h.ExpiresIn < h.TTL/3
}

// expiresText is "28s", or "unknown" when the engine could not tell.
func expiresText(h lock.Holder) string {
	if h.ExpiresIn < 0 {
		return "unknown"
	}
	return lock.RoundDuration(h.ExpiresIn)
}

// heldForText is how long the holder has held the lock, or "unknown".
func heldForText(h lock.Holder, now time.Time) string {
	if h.AcquiredAt.IsZero() {
		return "unknown"
	}
	return lock.RoundDuration(now.Sub(h.AcquiredAt))
}

// printable makes holder-supplied text (notes, commands, user names) safe
// to print on a terminal: anything that is not printable is shown escaped,
// so a note cannot move the cursor, clear the screen or fake a line.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			q := strconv.Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}
