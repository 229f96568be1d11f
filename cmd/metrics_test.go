package cmd

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/metrics"
	"github.com/distlock/distlock/internal/runner"
)

// TestOutcomeOf: how each way a run ends is counted in --metrics-file,
// and the command's own status recorded when it ended by itself.
func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		want   metrics.Outcome
		status int
	}{
		{"command succeeded", nil, metrics.OK, 0},
		{"command failed", commandStatus(3), metrics.Failed, 3},
		{"command exited 1", commandStatus(1), metrics.Failed, 1},
		{"command killed", commandStatus(137), metrics.Failed, 137},
		{"command's end unknown", commandStatus(child.UnknownStatus), metrics.Error, 0},
		{"busy", fmt.Errorf("acquire: %w", &lock.BusyError{Holder: lock.Holder{Key: "k"}}), metrics.Busy, 0},
		{"lost", &runner.LostError{Key: "k", Reason: lock.ErrNotHeld}, metrics.Lost, 0},
		{"max-hold", &runner.MaxHoldError{Key: "k", MaxHold: 1e9}, metrics.MaxHold, 0},
		{"unreachable", &lock.UnavailableError{Msg: "down"}, metrics.Error, 0},
		{"interrupted", &runner.InterruptedError{Key: "k", Signal: syscall.SIGINT}, metrics.Error, 0},
		{"not found", &child.StartError{NotFound: true, Msg: "command not found: x"}, metrics.Error, 0},
		{"internal", errors.New("boom"), metrics.Error, 0},
		{"slot already done", &ledger.SkippedError{Key: "k", Slot: "s"}, metrics.Skipped, 0},
	} {
		got, status := outcomeOf(tc.err)
		if got != tc.want || status != tc.status {
			t.Errorf("%s: outcomeOf = %s, %d; want %s, %d", tc.name, got, status, tc.want, tc.status)
		}
	}
}
