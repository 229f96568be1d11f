package cmd

import (
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/runner"
)

// ledgerFlags are run's flags for the run ledger: --once-per, --slot and
// --history.
type ledgerFlags struct {
	OncePer time.Duration
	Slot    string
	slotSet bool // --slot was given, even empty
	History int
}

func (f *ledgerFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.DurationVar(&f.OncePer, "once-per", 0, "run the command at most once per slot of this length (24h: the UTC day; 1h, 15m), cut from the Unix epoch in UTC at the time distlock starts: a run that finds its slot done by a successful run exits 0 without running it")
	fs.StringVar(&f.Slot, "slot", "", `as --once-per, with the slot named: run at most once per NAME (e.g. --slot "$(date -u +%F)"); 1-200 bytes`)
	fs.IntVar(&f.History, "history", ledger.DefaultBound, "runs of KEY kept in the engine for distlock history (0-1000; 0: none for runs without --once-per or --slot); the successful run of each of its last max(100, N) slots done is kept besides, so those slots stay done")
}

// check validates the flags (exit 64); changed says whether --slot was
// given.
func (f *ledgerFlags) check(c *cobra.Command) error {
	f.slotSet = c.Flags().Changed("slot")
	switch {
	case f.slotSet && c.Flags().Changed("once-per"):
		return lock.Invalidf("--once-per and --slot name the slot two ways: give one")
	case f.History < 0 || f.History > 1000:
		return lock.Invalidf("--history must be 0-1000, got %d", f.History)
	case f.slotSet:
		return ledger.CheckSlot(f.Slot)
	case c.Flags().Changed("once-per"):
		return ledger.CheckOncePer(f.OncePer)
	}
	return nil
}

// slot is the run's slot, cut at start; "" without --once-per or --slot.
func (f *ledgerFlags) slot(start time.Time) string {
	switch {
	case f.slotSet:
		return f.Slot
	case f.OncePer > 0:
		return ledger.SlotOf(start, f.OncePer)
	}
	return ""
}

// slotEnv tells the command its slot (DISTLOCK_RUN_SLOT), when it has
// one: a job that reports on "yesterday" reads which day it does.
func slotEnv(slot string) []string {
	if slot == "" {
		return nil
	}
	return []string{"DISTLOCK_RUN_SLOT=" + slot}
}

// runLedger is the run's record in KEY's ledger, or nil when none is kept
// (--history 0 without a slot, or an engine that keeps no ledger).
func (f *ledgerFlags) runLedger(b lock.Backend, req lock.Request, slot string, log *slog.Logger) (*ledger.Run, error) {
	store, ok := b.(lock.Ledger)
	switch {
	case !ok && slot != "":
		return nil, errNoLedger
	case !ok || (f.History == 0 && slot == ""):
		return nil, nil
	}
	return &ledger.Run{
		Store: store, Key: req.Key, Bound: max(f.History, 1), Slot: slot,
		Host: req.Meta.Host, PID: os.Getpid(), Command: req.Meta.Command, Log: log,
	}, nil
}

// errNoLedger: --once-per or --slot on an engine that keeps no run ledger.
var errNoLedger = errors.New("this engine keeps no run ledger: --once-per and --slot cannot be used with it")

// runnerLedger is rl as the runner takes it: a nil *ledger.Run is no
// ledger, not a non-nil interface holding nil.
func runnerLedger(rl *ledger.Run) runner.Ledger {
	if rl == nil {
		return nil
	}
	return rl
}
