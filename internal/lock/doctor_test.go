package lock

import (
	"strings"
	"testing"
	"time"
)

// TestClockOffsetCheck: an offset within TTL·ρ is fine whichever side it
// is on; beyond it is a warning (a steady offset never shortens a lease).
func TestClockOffsetCheck(t *testing.T) {
	for _, tc := range []struct {
		offset, unc, ttl time.Duration
		want             CheckStatus
		says             string
	}{
		{0, time.Millisecond, 30 * time.Second, CheckOK, "allowance at --ttl 30s is 300ms"},
		{299 * time.Millisecond, time.Millisecond, 30 * time.Second, CheckOK, "299ms (±1ms) ahead of"},
		{-299 * time.Millisecond, time.Millisecond, 30 * time.Second, CheckOK, "behind"},
		{301 * time.Millisecond, time.Millisecond, 30 * time.Second, CheckWarning, "301ms"},
		{-2 * time.Second, time.Millisecond, 30 * time.Second, CheckWarning, "2s (±1ms) behind"},
		{25 * time.Millisecond, 100 * time.Microsecond, 2 * time.Second, CheckWarning, "allowance at --ttl 2s is 20ms"},
	} {
		c := ClockOffsetCheck(tc.offset, tc.unc, tc.ttl, "TIME")
		if c.Name != "clock" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status == CheckOK) != (c.Fix == "") {
			t.Errorf("ClockOffsetCheck(%s, %s, %s) = %+v, want %s saying %q and a fix unless ok", tc.offset, tc.unc, tc.ttl, c, tc.want, tc.says)
		}
	}
}

// TestClockRateCheck: only an engine clock certainly more than ρ fast is a
// problem; one that may be, an imprecise measure and a slow one are warnings.
func TestClockRateCheck(t *testing.T) {
	for _, tc := range []struct {
		fast, unc float64
		want      CheckStatus
		says      string
	}{
		{0, 0.001, CheckOK, "0.00% (±0.10%) faster"},
		{0.008, 0.001, CheckOK, "0.80%"},
		{-0.008, 0.001, CheckOK, "slower"},
		{0.02, 0.001, CheckProblem, "2.00% (±0.10%) faster"},
		{0.0095, 0.001, CheckWarning, "0.95%"},
		{0, 0.006, CheckWarning, "±0.60%"},
		{-0.05, 0.001, CheckWarning, "5.00% (±0.10%) slower"},
	} {
		c := ClockRateCheck(tc.fast, tc.unc, "lease countdown")
		if c.Name != "clock" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status == CheckOK) != (c.Fix == "") {
			t.Errorf("ClockRateCheck(%v, %v) = %+v, want %s saying %q and a fix unless ok", tc.fast, tc.unc, c, tc.want, tc.says)
		}
	}
}
