package runner

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/ledger"
)

// begin records the run's start in the ledger, which may end the run
// here (its slot is done, or the ledger cannot tell); ctx is bounded by
// the lease and cfg.ReleaseTimeout (prestart).
func (r *run) begin(ctx context.Context) error {
	if r.cfg.Ledger == nil {
		return nil
	}
	return r.cfg.Ledger.Begin(ctx, r.lease)
}

// record writes the run's end in the ledger, the first of the way out's
// engine calls (wayOut). An engine that did not answer it by the way
// out's deadline is silent: the release then gets only what is left.
func (r *run) record(outcome ledger.Outcome, code int) {
	if r.cfg.Ledger == nil {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), r.wayOut())
	defer cancel()
	r.cfg.Ledger.End(ctx, outcome, code)
	r.silent = ctx.Err() != nil
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

// wayOut is when the way out's engine calls should be done: the ledger's
// end and then the release (or --min-hold's hold) share one
// cfg.ReleaseTimeout from the moment the command ended, so that an engine
// that has gone silent holds distlock's exit up by that, not by twice
// that (network/sigterm_exits_promptly_when_engine_silent). Marking a
// slot done comes first: a missed mark runs the job again, a missed
// release only leaves the lease to expire.
func (r *run) wayOut() time.Time {
	if r.outBy.IsZero() {
		r.outBy = time.Now().Add(r.cfg.ReleaseTimeout)
	}
	return r.outBy
}

// leftForRelease is the release's (or hold's) bound: what the way out has
// left after the ledger's end, but at least half a ReleaseTimeout when
// the engine answered it, so a slow ledger write does not leave the
// release no chance (the way out then takes at most 1.5
// ReleaseTimeouts). An engine that left the ledger's end unanswered gets
// no more time: its lease will expire by itself.
func (r *run) leftForRelease() time.Duration {
	switch {
	case r.outBy.IsZero():
		return r.cfg.ReleaseTimeout
	case r.silent:
		return max(time.Until(r.outBy), 0)
	}
	return max(time.Until(r.outBy), r.cfg.ReleaseTimeout/2)
}
