package ledger

import (
	"context"
	"slices"

	"github.com/distlock/distlock/internal/lock"
)

// History is a key's ledger as read: its kept runs, newest first, and
// the pinned last success (nil if there is none).
type History struct {
	Runs        []Entry
	LastSuccess *Entry
}

// Read reads key's ledger from store. Entries that do not decode (written
// by a later distlock, or damaged) are left out.
func Read(ctx context.Context, store lock.Ledger, key string) (History, error) {
	raw, err := store.Entries(ctx, key)
	if err != nil {
		return History{}, err
	}
	return parse(raw), nil
}

func parse(raw map[string][]byte) History {
	var h History
	for _, id := range runIDs(raw) {
		if e, ok := decode(raw[id]); ok {
			h.Runs = append(h.Runs, e)
		}
	}
	slices.Reverse(h.Runs)
	if e, ok := decode(raw[PinnedID]); ok {
		h.LastSuccess = &e
	}
	for i, e := range h.Runs {
		if e.Outcome == OK && (h.LastSuccess == nil || e.Started.After(h.LastSuccess.Started)) {
			h.LastSuccess = &h.Runs[i]
		}
	}
	return h
}

// runIDs are the ids of raw's runs, oldest first (the pinned entry is not
// a run of its own).
func runIDs(raw map[string][]byte) []string {
	ids := make([]string, 0, len(raw))
	for id := range raw {
		if id != PinnedID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// SlotDone is the successful run that did slot, or nil while it is open:
// the pinned last success or any kept run that ended ok with this slot.
func (h History) SlotDone(slot string) *Entry {
	if s := h.LastSuccess; s != nil && s.Slot == slot {
		return s
	}
	for i, e := range h.Runs {
		if e.Outcome == OK && e.Slot == slot {
			return &h.Runs[i]
		}
	}
	return nil
}

// Resolve gives every run with no end its shown outcome: Running while one
// of the key's holders right now has its token and holder id, else
// Unknown (its distlock died before it wrote the end).
func (h History) Resolve(holders []lock.Holder) History {
	out := History{Runs: slices.Clone(h.Runs), LastSuccess: h.LastSuccess}
	for i, e := range out.Runs {
		if e.Ended != nil {
			continue
		}
		out.Runs[i].Outcome = Unknown
		for _, hd := range holders {
			if hd.Token == e.Token && hd.ID() == e.Holder {
				out.Runs[i].Outcome = Running
			}
		}
	}
	return out
}
