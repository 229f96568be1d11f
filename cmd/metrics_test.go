package cmd

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/metrics"
	"github.com/distlock/distlock/internal/runner"
)

// TestOutcomeOf: how each way a run ends is counted in --metrics-file.
func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want metrics.Outcome
	}{
		{"command succeeded", nil, metrics.Ran},
		{"command failed", commandStatus(3), metrics.Ran},
		{"command killed", commandStatus(137), metrics.Ran},
		{"command's end unknown", commandStatus(child.UnknownStatus), metrics.Error},
		{"busy", fmt.Errorf("acquire: %w", &lock.BusyError{Holder: lock.Holder{Key: "k"}}), metrics.Busy},
		{"lost", &runner.LostError{Key: "k", Reason: lock.ErrNotHeld}, metrics.Lost},
		{"max-hold", &runner.MaxHoldError{Key: "k", MaxHold: 1e9}, metrics.MaxHold},
		{"unreachable", &lock.UnavailableError{Msg: "down"}, metrics.Error},
		{"interrupted", &runner.InterruptedError{Key: "k", Signal: syscall.SIGINT}, metrics.Error},
		{"not found", &child.StartError{NotFound: true, Msg: "command not found: x"}, metrics.Error},
		{"internal", errors.New("boom"), metrics.Error},
	} {
		if got := outcomeOf(tc.err); got != tc.want {
			t.Errorf("%s: outcomeOf = %s, want %s", tc.name, got, tc.want)
		}
	}
}
