package consul

import (
	"cmp"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// The read side: a key's line as one transaction reads it, its records,
// and what Inspect, List, Break and the test harness make of it.

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
	s := lock.Seat{Token: e.rec.Token, Hold: e.rec.Hold, Limit: e.rec.Limit, Slot: e.rec.Slot}
	if e.rec.Hold == "" {
		return e.rec.Record.Describe(key, s, time.Now())
	}
	// Consul keeps a hold's session at least its TTL: the earliest end.
	ttl := time.Duration(e.rec.HoldMs) * time.Millisecond
	s.HoldEnd = e.rec.HeldAt.Add(ttl)
	h := e.rec.Record.Describe(key, s, time.Now())
	h.TTL = ttl
	return h
}

// line is KEY's entries in order of arrival (CreateIndex). Entries whose
// value is not a record (written by something else) are left out.
func line(kvs api.KVPairs, dir string) []entry {
	var out []entry
	for _, kv := range kvs {
		rest, ok := strings.CutPrefix(kv.Key, dir)
		var r record
		if !ok || rest == "" || strings.Contains(rest, "/") || json.Unmarshal(kv.Value, &r) != nil || r.Owner == "" {
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

// view is one read of KEY: its line, its token counter and its slots.
type view struct {
	line    []entry
	counter api.KVPair // zero when the key never had a token
	slots   []*api.KVPair
}

// position is the place of session sid's entry in the line, -1 if absent.
func (v view) position(sid string) int {
	return slices.IndexFunc(v.line, func(e entry) bool {
		return e.kv.Session == sid && strings.HasSuffix(e.kv.Key, "/"+sid)
	})
}

// freeSlot is the lowest slot under dir that no slot key claims, or -1.
func (v view) freeSlot(dir string, limit int) int {
	for i := range limit {
		if !slices.ContainsFunc(v.slots, func(kv *api.KVPair) bool { return kv.Key == dir+strconv.Itoa(i) }) {
			return i
		}
	}
	return -1
}

// readKey reads KEY's line, counter and slots in one transaction (op
// names it in errors), after join (a waiter's entry, whose result comes
// first); ok is false when the join failed. The reads are get-trees: a
// missing key is no error, where a get of it would fail the transaction.
func (b *Backend) readKey(ctx context.Context, op, key string, join ...*api.TxnOp) (v view, ok bool, err error) {
	ok, res, _, err := b.txn(ctx, op, slices.Concat(join, api.TxnOps{
		kvOp(api.KVGetTree, b.lineDir(key), nil, 0, ""),
		kvOp(api.KVGetTree, b.tokenKey(key), nil, 0, ""),
		kvOp(api.KVGetTree, b.slotDir(key), nil, 0, ""),
	}))
	if err != nil || !ok {
		return view{}, false, err
	}
	var kvs api.KVPairs
	for _, r := range res[len(join):] {
		switch kv := r.KV; {
		case kv == nil:
		case kv.Key == b.tokenKey(key):
			v.counter = *kv
		case strings.HasPrefix(kv.Key, b.slotDir(key)):
			v.slots = append(v.slots, kv)
		default:
			kvs = append(kvs, kv)
		}
	}
	v.line = line(kvs, b.lineDir(key))
	return v, true, nil
}

// describe is the holders of key that es are.
func describe(key string, es []entry) []lock.Holder {
	out := make([]lock.Holder, 0, len(es))
	for _, e := range es {
		out = append(out, e.holder(key))
	}
	return out
}

// Inspect implements lock.Backend: a key is described by its oldest
// holder (lock.InspectOldest). A mutex's first in line that has not taken
// over yet shows token 0. Consul does not say how long another client's
// session has left: ExpiresIn is -1.
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	return lock.InspectOldest(ctx, key, b.InspectSlots)
}

// InspectSlots implements lock.SlotInspector: every holder, by slot (in
// line order among those that have not taken over yet).
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	v, _, err := b.readKey(ctx, "read "+key, key)
	out := describe(key, holders(v.line))
	slices.SortStableFunc(out, func(a, b lock.Holder) int { return cmp.Compare(a.Slot, b.Slot) })
	return out, err
}

// QueueLen implements lock.LineCounter (status's waiting): how many
// contenders wait behind the holders of key.
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	v, _, err := b.readKey(ctx, "read "+key, key)
	return int64(len(v.line) - len(holders(v.line))), err
}

// List implements lock.Backend: one read of every line under the root,
// each key described by its oldest holder (lock.ListOldest), as Inspect.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	kvs, _, err := b.list(b.root+"/", qo(ctx))
	if err != nil {
		return nil, b.opError("list", err)
	}
	byKey := map[string]api.KVPairs{}
	for _, kv := range kvs {
		seg, _, ok := strings.Cut(strings.TrimPrefix(kv.Key, b.root+"/"), "/")
		if ok && !strings.Contains(seg, "#") {
			byKey[seg] = append(byKey[seg], kv)
		}
	}
	var hs []lock.Holder
	for seg, kvs := range byKey {
		if key, err := url.PathUnescape(seg); err == nil {
			hs = append(hs, describe(key, holders(line(kvs, b.lineDir(key))))...)
		}
	}
	return lock.ListOldest(keyPrefix, hs), nil
}

// Break implements lock.Backend by lock.BreakAgain over the holders a read
// found (token 0: every one). A holder is broken by deleting its entry and
// slot, each only if the session read still holds it, then destroying that
// session (deleted first, the slot gets no lock-delay: a break hands over
// at once, as on every engine); its next renewal is "not yours". A holder
// whose session changed since the read (a hold moved it) is broken again.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	return lock.BreakAgain(ctx, key, token, func(ctx context.Context) ([]lock.Holder, func(int) (bool, error), error) {
		v, _, err := b.readKey(ctx, "read "+key, key)
		hs := holders(v.line)
		return describe(key, hs), func(i int) (bool, error) {
			target, slot := hs[i], ""
			if target.rec.Token != 0 { // it took over: it holds its slot
				slot = b.slotKey(key, target.rec.Slot)
			}
			ok, _, _, err := b.txn(ctx, "break "+key, dropOps(target.kv.Key, slot, target.kv.Session))
			if ok {
				b.cleanup(ctx, target.kv.Session)
			} else if err == nil { // moved by a hold, or let go
				err = lock.ErrMoved
			}
			return ok, err
		}, err
	})
}
