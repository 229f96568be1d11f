package consul

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// record is a line entry's value: the contender's lock.Record, then its
// token once it holds (0 while it waits), the limit it asked for, its
// semaphore slot, and the hold that keeps it with no renewals.
type record struct {
	lock.Record
	Token  uint64    `json:"token,omitempty"`
	Limit  int       `json:"limit,omitempty"`
	Slot   int       `json:"slot,omitempty"`
	Hold   string    `json:"hold,omitempty"`
	HoldMs int64     `json:"hold_ms,omitempty"`
	HeldAt time.Time `json:"held_at,omitzero"` // the holder's clock when the hold began
}

func (r record) encode() []byte {
	b, _ := json.Marshal(r) // plain fields: cannot fail
	return b
}

// limit is the record's limit, a mutex's being 1.
func (r record) limit() int { return max(r.Limit, 1) }

// entry is one line entry as read: its KV pair and its decoded record.
type entry struct {
	kv  *api.KVPair
	rec record
}

// holder describes the entry's contender, of key.
func (e entry) holder(key string) lock.Holder {
	h := e.rec.Record.Holder(key)
	h.Token, h.Hold = e.rec.Token, e.rec.Hold
	if e.rec.Hold != "" {
		// Consul keeps a hold's session at least its TTL: the earliest end.
		h.TTL = time.Duration(e.rec.HoldMs) * time.Millisecond
		h.ExpiresIn = max(time.Until(e.rec.HeldAt.Add(h.TTL)), 0)
	}
	if e.rec.limit() > 1 {
		h.Limit, h.Slot = e.rec.Limit, e.rec.Slot
	}
	return h
}

// line is KEY's entries in order of arrival (CreateIndex). Entries whose
// value is not a record (written by something else) are left out.
func line(kvs api.KVPairs, dir string) []entry {
	var out []entry
	for _, kv := range kvs {
		rest, ok := strings.CutPrefix(kv.Key, dir)
		if !ok || rest == "" || strings.Contains(rest, "/") {
			continue
		}
		var r record
		if json.Unmarshal(kv.Value, &r) != nil || r.Owner == "" {
			continue
		}
		out = append(out, entry{kv: kv, rec: r})
	}
	slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.kv.CreateIndex, b.kv.CreateIndex) })
	return out
}

// holders is the part of the line that holds: the first limit entries,
// limit being the first entry's.
func holders(es []entry) []entry {
	if len(es) == 0 {
		return nil
	}
	return es[:min(len(es), es[0].rec.limit())]
}

// keyOf is the user's key of a line directory's escaped segment.
func keyOf(escaped string) (string, bool) {
	k, err := url.PathUnescape(escaped)
	return k, err == nil
}
