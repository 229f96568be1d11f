package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// DefaultBound is how many runs a key keeps by default (--history).
const DefaultBound = 100

// Run is one `distlock run`'s place in its key's ledger: Begin writes its
// entry once the lock is held, End rewrites it whole when the command has
// ended, before the lock is let go, so that the next holder reads it.
type Run struct {
	Store   lock.Ledger
	Key     string
	Bound   int    // runs kept (oldest trimmed first) besides done slots' successes (trim.go); at least 1
	Slot    string // --once-per / --slot: run only if no run of this slot succeeded
	Host    string
	PID     int
	Command string
	Log     *slog.Logger
	Now     func() time.Time // time.Now if nil

	id    string
	entry Entry
}

// SkippedError: the run's slot was done already; the command was not run.
// A run that returns it exits 0.
type SkippedError struct {
	Key  string
	Slot string
	Done Entry // the run that did it
}

func (e *SkippedError) Error() string {
	at := e.Done.Started
	if e.Done.Ended != nil {
		at = *e.Done.Ended
	}
	return fmt.Sprintf("%s: slot %s was done at %s on %s (token %d); the command was not run",
		e.Key, e.Slot, at.UTC().Format(time.RFC3339), e.Done.Host, e.Done.Token)
}

func (r *Run) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Begin records the run as started under lease. With a slot it reads the
// ledger first: a slot done already writes a skipped run and returns a
// *SkippedError; a ledger that cannot be read returns an error that
// wraps lock.ErrUnavailable (the command must not run blind). Without a
// slot, a ledger that cannot be read or written is a warning.
func (r *Run) Begin(ctx context.Context, lease lock.Lease) error {
	now := r.now()
	holder := lock.HolderID(lease.Owner())
	r.id = EntryID(now, holder)
	r.entry = Entry{Token: lease.Token(), Host: r.Host, Holder: holder, PID: r.PID, Command: r.Command, Slot: r.Slot, Started: now}
	raw, err := r.Store.Entries(ctx, r.Key)
	if err != nil && r.Slot != "" {
		return unreadable(r.Key, err)
	}
	if err != nil {
		r.Log.Warn("cannot read the run ledger; the run goes on", "key", r.Key, "error", err)
	}
	if r.Slot != "" {
		if done := parse(raw).SlotDone(r.Slot); done != nil {
			if err := r.finish(ctx, Skipped, 0); err != nil {
				r.Log.Warn("cannot record the skipped run in the run ledger", "key", r.Key, "error", err)
			}
			r.trim(ctx, raw)
			return &SkippedError{Key: r.Key, Slot: r.Slot, Done: *done}
		}
	}
	if err := r.put(ctx, r.id, r.entry); err != nil {
		r.Log.Warn("cannot record the run's start in the run ledger; the run goes on", "key", r.Key, "error", err)
	}
	r.trim(ctx, raw)
	return nil
}

// End records how the run went: its outcome and the command's exit code
// (none for Unknown). A successful run is pinned as the key's last
// success, which is what marks its slot done; if that cannot be written
// the slot stays open and a later run may run it again (a warning says
// so).
func (r *Run) End(ctx context.Context, outcome Outcome, code int) {
	if r.id == "" {
		return
	}
	err := r.finish(ctx, outcome, code)
	if err == nil && outcome == OK {
		err = r.put(ctx, PinnedID, r.entry)
	}
	switch {
	case err != nil && outcome == OK && r.Slot != "":
		r.Log.Warn("cannot mark the slot done in the run ledger: a later run may run it again", "key", r.Key, "slot", r.Slot, "error", err)
	case err != nil:
		r.Log.Warn("cannot record the run's end in the run ledger", "key", r.Key, "error", err)
	}
}

// finish writes the run's entry with its end.
func (r *Run) finish(ctx context.Context, outcome Outcome, code int) error {
	end := r.now()
	r.entry.Ended, r.entry.Outcome = &end, outcome
	if outcome != Unknown {
		r.entry.ExitCode = &code
	}
	return r.put(ctx, r.id, r.entry)
}

func (r *Run) put(ctx context.Context, id string, e Entry) error {
	data, err := e.encode()
	if err != nil {
		return err
	}
	return r.Store.PutEntry(ctx, r.Key, id, data)
}

// trim deletes the oldest runs beyond the bound, but not the successes
// that keep the last slots done (trimmed): of the runs read before this
// run's entry was written, and this one. A run written since by another
// holder (a semaphore) is not among them and is trimmed by a later run.
func (r *Run) trim(ctx context.Context, raw map[string][]byte) {
	ids := runIDs(raw)
	if _, ok := raw[r.id]; !ok {
		ids = append(ids, r.id)
		slices.Sort(ids)
	}
	if old := trimmed(raw, ids, max(r.Bound, 1)); len(old) > 0 {
		if err := r.Store.DeleteEntries(ctx, r.Key, old); err != nil {
			r.Log.Warn("cannot trim the run ledger", "key", r.Key, "error", err)
		}
	}
}

// unreadable: a --once-per run cannot tell whether its slot is done.
func unreadable(key string, err error) error {
	msg := fmt.Sprintf("cannot read the run ledger of %s, so whether its slot is done is unknown; the command was not run: %v", key, err)
	var ue *lock.UnavailableError
	if errors.As(err, &ue) {
		return &lock.UnavailableError{Msg: msg, Err: err, Refused: ue.Refused}
	}
	return &lock.UnavailableError{Msg: msg, Err: err}
}
