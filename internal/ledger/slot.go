package ledger

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/distlock/distlock/internal/lock"
)

// MinOncePer is the shortest --once-per.
const MinOncePer = time.Second

// MaxSlotLen is the longest slot name, in bytes.
const MaxSlotLen = 200

// SlotOf names the slot of length d that t falls in. Slots are cut from
// the Unix epoch in UTC, so 24h is the UTC day and 1h the UTC hour:
// "2026-11-25T14:00:00Z/1h" is the hour from 14:00 UTC.
func SlotOf(t time.Time, d time.Duration) string {
	start := time.UnixMicro(t.UnixMicro() / d.Microseconds() * d.Microseconds()).UTC()
	return start.Format(time.RFC3339) + "/" + shortDuration(d)
}

// shortDuration is d as Go writes it without the zero tails: 24h, 1h30m,
// 15m, 90s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// CheckOncePer validates --once-per (exit 64).
func CheckOncePer(d time.Duration) error {
	if d < MinOncePer {
		return lock.Invalidf("--once-per must be at least %s, got %s", MinOncePer, d)
	}
	return nil
}

// CheckSlot validates --slot NAME (exit 64): 1–200 bytes of printable
// text.
func CheckSlot(name string) error {
	switch {
	case name == "":
		return lock.Invalidf("--slot is empty: give it a name such as \"$(date -u +%%F)\"")
	case len(name) > MaxSlotLen:
		return lock.Invalidf("--slot is %d bytes long; the limit is %d", len(name), MaxSlotLen)
	case !utf8.ValidString(name):
		return lock.Invalidf("--slot is not valid UTF-8")
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return lock.Invalidf("--slot %q holds a control or non-printable character; use printable text", name)
		}
	}
	return nil
}
