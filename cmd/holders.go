package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// holdersOf is every holder of a held key: each slot of a semaphore when
// the engine can tell (lock.SlotInspector), else the holder Inspect or List
// described it by.
func (g *globalOptions) holdersOf(ctx context.Context, b lock.Backend, key string, h lock.Holder) ([]lock.Holder, error) {
	si, ok := b.(lock.SlotInspector)
	if !ok || h.Limit <= 1 {
		return []lock.Holder{h}, nil
	}
	ictx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	defer cancel()
	hs, err := si.InspectSlots(ictx, key)
	if err != nil {
		return nil, g.engineError(err)
	}
	if len(hs) == 0 { // let go since: show what was seen
		return []lock.Holder{h}, nil
	}
	return hs, nil
}

// semaphore reports whether hs are the slots of a semaphore.
func semaphore(hs []lock.Holder) bool { return len(hs) > 0 && hs[0].Limit > 1 }

// heldText is "2/3 held" for a semaphore's holders.
func heldText(hs []lock.Holder) string {
	return fmt.Sprintf("%d/%d held", len(hs), hs[0].Limit)
}

// holderJSON is one holder in the "holders" array of status, list and
// break -o json: one for a mutex, one per held slot of a semaphore.
type holderJSON struct {
	Slot int `json:"slot"`
	holderFields
}

// holderFields describe one holder, in holderJSON and (for the key's
// oldest holder) in statusJSON; embedded, their fields stand in place.
type holderFields struct {
	Token       uint64     `json:"token"`
	HolderID    string     `json:"holder_id"` // never the owner id: that is the holder's secret
	Host        string     `json:"host"`
	PID         int        `json:"pid"`
	User        string     `json:"user"`
	Command     string     `json:"command"`
	Note        string     `json:"note"`
	AcquiredAt  *time.Time `json:"acquired_at"`
	TTLms       int64      `json:"ttl_ms"`
	ExpiresInMs *int64     `json:"expires_in_ms"`
	Hold        string     `json:"hold"` // "" renewed by a running distlock, else lock.HoldMinHold or lock.HoldHandle
}

func toHolderJSON(h lock.Holder) holderJSON {
	return holderJSON{Slot: h.Slot, holderFields: toHolderFields(h)}
}

func toHolderFields(h lock.Holder) holderFields {
	f := holderFields{Token: h.Token, HolderID: h.ID(),
		Host: h.Meta.Host, PID: h.Meta.PID, User: h.Meta.User, Command: h.Meta.Command, Note: h.Meta.Note,
		TTLms: h.TTL.Milliseconds(), Hold: h.Hold}
	if !h.AcquiredAt.IsZero() {
		at := h.AcquiredAt.UTC().Truncate(time.Millisecond)
		f.AcquiredAt = &at
	}
	if h.ExpiresIn >= 0 {
		ms := h.ExpiresIn.Milliseconds()
		f.ExpiresInMs = &ms
	}
	return f
}

func toHoldersJSON(hs []lock.Holder) []holderJSON {
	out := make([]holderJSON, len(hs))
	for i, h := range hs {
		out[i] = toHolderJSON(h)
	}
	return out
}
