package runner

import (
	"testing"
	"time"
)

// TestLeftForRelease: the ledger's end and the release share one
// ReleaseTimeout; a release after an answered ledger write keeps at least
// half of one, and after a write the engine left unanswered it gets only
// what is left (none: the lease expires by itself).
func TestLeftForRelease(t *testing.T) {
	const timeout = time.Second
	fresh := &run{cfg: Config{ReleaseTimeout: timeout}}
	if got := fresh.leftForRelease(); got != timeout {
		t.Errorf("no ledger write: %s, want %s", got, timeout)
	}
	slow := &run{cfg: Config{ReleaseTimeout: timeout}, outBy: time.Now().Add(100 * time.Millisecond)}
	if got := slow.leftForRelease(); got != timeout/2 {
		t.Errorf("after a slow answered write: %s, want %s", got, timeout/2)
	}
	quick := &run{cfg: Config{ReleaseTimeout: timeout}, outBy: time.Now().Add(900 * time.Millisecond)}
	if got := quick.leftForRelease(); got <= timeout/2 || got > 900*time.Millisecond {
		t.Errorf("after a quick write: %s, want what is left (≤900ms, >500ms)", got)
	}
	silent := &run{cfg: Config{ReleaseTimeout: timeout}, outBy: time.Now().Add(-time.Millisecond), silent: true}
	if got := silent.leftForRelease(); got != 0 {
		t.Errorf("after an unanswered write: %s, want 0", got)
	}
	if by := fresh.wayOut(); by != fresh.wayOut() || time.Until(by) > timeout {
		t.Errorf("wayOut moves or is beyond one ReleaseTimeout: %v", by)
	}
}
