package runner

import (
	"context"
	"errors"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/ledger"
)

// begin records the run's start in the ledger, which may end the run
// here (its slot is done, or the ledger cannot tell).
func (r *run) begin(ctx context.Context) error {
	if r.cfg.Ledger == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, r.cfg.ReleaseTimeout)
	defer cancel()
	return r.cfg.Ledger.Begin(lctx, r.lease)
}

// record writes the run's end in the ledger, bounded as a release is.
func (r *run) record(outcome ledger.Outcome, code int) {
	if r.cfg.Ledger == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ReleaseTimeout)
	defer cancel()
	r.cfg.Ledger.End(ctx, outcome, code)
}

// outcomeOf is how a command that ran went: stopped for a lost lease or
// --max-hold, dead of a signal, or its exit status.
func outcomeOf(out child.Outcome) ledger.Outcome {
	var lost *LostError
	var maxh *MaxHoldError
	switch {
	case out.Stopped != nil && errors.As(out.Stopped.Reason, &lost):
		return ledger.Lost
	case out.Stopped != nil && errors.As(out.Stopped.Reason, &maxh):
		return ledger.MaxHold
	case out.Code == child.UnknownStatus:
		return ledger.Unknown
	case out.Killed:
		return ledger.Killed
	case out.Code == 0:
		return ledger.OK
	}
	return ledger.Failed
}

// startStatus is the status a command that could not be started exits
// with, as shells give it: 127 not found, 126 not executable.
func startStatus(err error) int {
	var st *child.StartError
	if errors.As(err, &st) && st.NotFound {
		return 127
	}
	return 126
}
