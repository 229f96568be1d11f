package etcd

// The slots of a key on etcd: a mutex is a semaphore of one. Slot i of
// KEY (0..N-1, N the limit) is "<prefix>/<url.PathEscape(KEY)>/slot/<i>",
// inside its queue prefix, on its holder's own lease; its value is the
// holder's record with its token, the limit and the slot (slotRecord).
//
// Older builds kept a mutex as a queue of contenders in the same prefix,
// "<prefix>/<url.PathEscape(KEY)>/<lease ID in hex>", the lowest create
// revision holding. Both builds exclude each other on one mutex: here any
// such key holds slot 0 (readSlots), and an older build finds our slot key
// in its queue ahead of any key it puts after it, so waits for it (its
// joinQueue takes only an empty queue, its takeover only when no key under
// the prefix is older than its own).

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/distlock/distlock/internal/lock"
)

// slotRecord is the value of a slot key: the holder's record, its limit
// and its slot. A waiter's key, and an older build's mutex contender, hold
// the record alone (Limit 0).
type slotRecord struct {
	record
	Limit int `json:"limit"`
	Slot  int `json:"slot"`
}

// value is how r is written: with the limit and the slot only on a slot.
func (r slotRecord) value() string {
	var v any = r
	if r.Limit == 0 {
		v = r.record
	}
	b, _ := json.Marshal(v) // plain fields: cannot fail
	return string(b)
}

func (b *Backend) slotPrefix(key string) string { return b.queuePrefix(key) + "slot/" }

// TryOnce implements lock.OnceTaker (each Try before the first Wait): on
// a lease of its own and outside the line (no waiter key), it looks and
// takes as a waiter does (step.go), but behind every waiter in line
// (lock.TryOffLine). When every slot is held, or others wait in line, the
// answer is busy, naming the oldest holder (else the first waiter). On any
// answer but the lease it revokes the lease: a put whose reply was lost
// goes with it.
func (w *waiter) TryOnce(ctx context.Context) (lock.Lease, error) {
	w.granted = time.Now()
	e, err := w.grant(ctx)
	if err != nil {
		return nil, err
	}
	w.e, w.free = e, -1
	l, err := lock.TryOffLine(ctx, w)
	// Identity, not errors.Is: only TryOffLine's own ctx.Err() is bare here;
	// every other error came through opError, which named its op already.
	if err != nil && err == ctx.Err() {
		return nil, w.b.opError("take a slot of "+w.req.Key, err)
	}
	return l, err
}

// slotsRead is what one read of a key's queue prefix says of its slots.
type slotsRead struct {
	free   int              // the lowest free slot below the limit; -1 none
	oldest *mvccpb.KeyValue // the oldest holder (lock.Oldest); nil none
	legacy bool             // an older build's mutex key holds slot 0
}

// contender says what key k under the queue prefix qp is: slot i
// ("slot/<i>", i in decimal as strconv.Itoa writes it), or an older
// build's mutex contender (legacy: a lease ID in hex and nothing else),
// which holds slot 0. Any other key there is not ours (ok false): --prefix
// may hold '/', so "--prefix team/ci" keeps its keys under the queue
// prefix of key "ci" of "--prefix team".
func contender(qp, k string) (i int, legacy, ok bool) {
	rest, ok := strings.CutPrefix(k, qp)
	if !ok {
		return 0, false, false
	}
	if idx, isSlot := strings.CutPrefix(rest, "slot/"); isSlot {
		i, err := strconv.Atoi(idx)
		return i, false, err == nil && strconv.Itoa(i) == idx && i >= 0
	}
	_, err := strconv.ParseUint(rest, 16, 64) // base 16: no sign, no "0x", no '/' nor '#'
	return 0, true, err == nil
}

// readSlots reads the keys under the queue prefix qp for req, in create
// revision order: a *lock.LimitMismatchError when a holder uses another
// limit (lock.Refuse; the busy answer is the caller's, which minds the
// line). An older build's mutex contender holds slot 0 of a mutex, and
// refuses a semaphore; a key that is not ours (contender) is passed over.
func readSlots(req lock.Request, qp string, kvs []*mvccpb.KeyValue) (slotsRead, error) {
	n := req.Limit
	held := make([]bool, n)
	var limits []lock.SeenLimit
	var sr slotsRead
	for _, kv := range kvs {
		i, legacy, ok := contender(qp, string(kv.Key))
		if !ok {
			continue // not a key of ours
		}
		sr.legacy = sr.legacy || legacy
		limits = append(limits, seenLimit(kv, !legacy, i, n))
		if i < n {
			held[i] = true
		}
	}
	sr.oldest = oldest(req.Key, holding(qp, kvs))
	if err := lock.Refuse(req.Key, n, nil, limits, false); err != nil {
		return slotsRead{}, err
	}
	sr.free = slices.Index(held, false)
	return sr, nil
}

// seenLimit is what key kv, holding slot i, tells of its holder's limit,
// for a request for n slots: an older build's mutex contender (no slot
// key) uses 1; else the limit in its record, unless the slot is not below
// it or the record gives none: then only that the limit is above the slot.
func seenLimit(kv *mvccpb.KeyValue, isSlot bool, i, n int) lock.SeenLimit {
	if !isSlot && n > 1 {
		return lock.SeenLimit{Have: 1}
	}
	var rec slotRecord
	if json.Unmarshal(kv.Value, &rec) == nil && rec.Limit > 0 && (rec.Limit != n || i < n) {
		return lock.SeenLimit{Have: rec.Limit}
	}
	return lock.SeenLimit{Have: i + 1, Bound: true}
}
