package etcd

// Semaphores (--limit N > 1) on etcd.
//
// # Layout
//
// Slot i of KEY (0..N-1) is one etcd key attached to its holder's own lease:
//
//	<prefix>/<url.PathEscape(KEY)>/slot/<i>
//
// inside KEY's queue prefix, next to where mutex contenders put their
// "<lease ID in hex>" keys. Its value is the holder's record (with its
// fencing token) plus the limit and the slot (slotRecord); a slot's token
// comes from the key's one counter (token.go), so tokens rise strictly
// across every acquisition of KEY, mutex or slot.
//
// An acquirer reads the whole queue prefix at revision R, refuses with a
// *lock.LimitMismatchError when a mutex contender is there or a slot holder
// uses another limit, picks the lowest free slot, and creates it in a
// transaction that requires every key under the prefix to be unchanged
// since R (a ModRevision compare over the prefix): the check and the take
// are one step, and on a conflict it reads again.
//
// Because slot keys live in the queue prefix, the mutex code sees them:
// Inspect (the first contender by create revision) describes the oldest
// slot holder, and a mutex acquirer that finds a slot holder first in line
// is refused with a *lock.LimitMismatchError (acquire.go, busy); semaphore
// acquirers that come after a queued mutex contender are refused too.
//
// # Waiting
//
// Semaphore waiters queue in arrival order, each in a key of its own
// outside the queue prefix (semwait.go). A try-once takes a slot only while
// no waiter is in line (a compare in the taking transaction): it never
// jumps the line, and never joins it.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// slotRecord is the value of a slot key.
type slotRecord struct {
	record
	Limit int `json:"limit"`
	Slot  int `json:"slot"`
}

func (b *Backend) slotPrefix(key string) string { return b.queuePrefix(key) + "slot/" }

// semFallbackPoll bounds a waiter's sleep should a watch stay silent.
const semFallbackPoll = 5 * time.Second

// semAttempt grants a lease and takes the lowest free slot with it; when
// every slot is held it revokes the lease and returns a *lock.BusyError
// naming the oldest holder, with the revision the slots were read at.
func (b *Backend) semAttempt(ctx context.Context, req lock.Request) (*SlotLease, int64, error) {
	granted := time.Now()
	g, err := b.cli.Grant(ctx, leaseSeconds(req.TTL))
	if err != nil {
		return nil, 0, b.opError("grant a lease for "+req.Key, err)
	}
	l, rev, err := b.semTake(ctx, req, g.ID, granted)
	if err != nil {
		// The put may have been applied if the reply was lost: revoking the
		// lease removes it.
		b.semRevoke(ctx, g.ID)
	}
	return l, rev, err
}

func (b *Backend) semTake(ctx context.Context, req lock.Request, id clientv3.LeaseID, granted time.Time) (*SlotLease, int64, error) {
	qp, wp, n := b.queuePrefix(req.Key), b.semWaitPrefix(req.Key), req.Limit
	for {
		resp, err := b.cli.Txn(ctx).Then(
			clientv3.OpGet(qp, clientv3.WithPrefix()),
			clientv3.OpGet(wp, clientv3.WithFirstCreate()...),
			clientv3.OpGet(b.tokenKey(req.Key)),
		).Commit()
		if err != nil {
			return nil, 0, b.opError("read the slots of "+req.Key, err)
		}
		rev := resp.Header.Revision
		last, err := counterOf(req.Key, resp.Responses[2])
		if err != nil {
			return nil, 0, b.opError("read the slots of "+req.Key, err)
		}
		sr, err := readSlots(req, qp, resp.Responses[0].GetResponseRange().Kvs)
		if err != nil {
			return nil, 0, err
		}
		if waiters := resp.Responses[1].GetResponseRange().Kvs; len(waiters) > 0 || sr.free < 0 {
			// Full, or others wait in line: a try-once does not jump it.
			return nil, rev, &lock.BusyError{Holder: b.semBusyHolder(ctx, req.Key, sr.oldest, waiters)}
		}
		sk := b.slotPrefix(req.Key) + strconv.Itoa(sr.free)
		tok := nextToken(last)
		rec := slotRecord{record: newRecord(req, time.Now()), Limit: n, Slot: sr.free}
		rec.QueuedAt, rec.Token = time.Time{}, tok
		tr, err := b.cli.Txn(ctx).
			If(
				clientv3.Compare(clientv3.ModRevision(qp).WithPrefix(), "<", rev+1),
				clientv3.Compare(clientv3.CreateRevision(wp).WithPrefix(), "=", 0), // nobody in line
			).
			Then(b.grantOp(req.Key, tok, clientv3.OpPut(sk, encodeJSON(rec), clientv3.WithLease(id)))).
			Commit()
		if err != nil {
			return nil, 0, b.opError("take a slot of "+req.Key, err)
		}
		if tr.Succeeded {
			ok, _, err := grantResult(req.Key, tr.Responses[0])
			if err != nil {
				return nil, 0, b.opError("take a slot of "+req.Key, err)
			}
			if ok {
				e := &entry{key: req.Key, qp: qp, etcdKey: sk, id: id, rev: tr.Header.Revision, token: tok, rec: rec.record, slot: &rec}
				return &SlotLease{l: b.newLease(e, granted), slot: sr.free}, 0, nil
			}
			// The counter is at or above our token (a clock behind the
			// last token): read again at once, offering the counter + 1.
			continue
		}
		// Someone changed the key's slots, queue or line since our read:
		// read again, after a moment so that racing acquirers spread out.
		t := time.NewTimer(time.Duration(rand.Int64N(int64(5 * time.Millisecond))))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, 0, b.opError("take a slot of "+req.Key, ctx.Err())
		case <-t.C:
		}
	}
}

// slotsRead is what one read of a key's queue prefix says of its slots.
type slotsRead struct {
	free   int              // the lowest free slot below the limit; -1 none
	oldest *mvccpb.KeyValue // the slot holder with the lowest create revision; nil none
}

// readSlots reads the keys under the queue prefix qp for req: a
// *lock.LimitMismatchError when a mutex contender is there or a slot holder
// uses another limit.
func readSlots(req lock.Request, qp string, kvs []*mvccpb.KeyValue) (slotsRead, error) {
	n := req.Limit
	held := make([]bool, n)
	var oldest *mvccpb.KeyValue
	for _, kv := range kvs {
		idx, isSlot := strings.CutPrefix(strings.TrimPrefix(string(kv.Key), qp), "slot/")
		if !isSlot {
			return slotsRead{}, &lock.LimitMismatchError{Key: req.Key, Want: n, Have: 1}
		}
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			continue // not a key of ours
		}
		var rec slotRecord
		if json.Unmarshal(kv.Value, &rec) == nil && rec.Limit > 0 && rec.Limit != n {
			return slotsRead{}, &lock.LimitMismatchError{Key: req.Key, Want: n, Have: rec.Limit}
		}
		if i >= n { // only a holder with a larger limit can be there
			return slotsRead{}, &lock.LimitMismatchError{Key: req.Key, Want: n, Have: max(rec.Limit, i+1)}
		}
		held[i] = true
		if oldest == nil || kv.CreateRevision < oldest.CreateRevision {
			oldest = kv
		}
	}
	sr := slotsRead{free: -1, oldest: oldest}
	for i, h := range held {
		if !h {
			sr.free = i
			break
		}
	}
	return sr, nil
}

// semBusyHolder names whom a busy semaphore acquirer waits for: the oldest
// slot holder, else the first waiter in line (waiters: its key, if any).
func (b *Backend) semBusyHolder(ctx context.Context, key string, oldest *mvccpb.KeyValue, waiters []*mvccpb.KeyValue) lock.Holder {
	switch {
	case oldest != nil:
		return b.holderOf(ctx, key, oldest)
	case len(waiters) > 0:
		return waiterHolder(key, waiters[0])
	}
	return lock.Holder{Key: key, ExpiresIn: -1}
}

// semRevoke drops a lease on a fresh short context.
func (b *Backend) semRevoke(ctx context.Context, id clientv3.LeaseID) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.dialTO, cleanupTimeout))
	defer cancel()
	_, _ = b.cli.Revoke(cctx, id)
}

// breakSlots is Break's hook for semaphores; handled is false when no slot
// of key is held (Break then goes on as for a mutex). With token != 0 it
// deletes the slot with that token (its record's; compare-and-delete on
// the create revision of the slot key, whose token never changes), or returns a *lock.BusyError naming the oldest holder when no
// slot has it. With token 0 it deletes every slot and returns the oldest
// holder. Like the mutex's Break it deletes keys, not leases: each holder's
// next Renew finds its key gone.
func (b *Backend) breakSlots(ctx context.Context, key string, token uint64) (lock.Holder, bool, error) {
	for range 5 {
		resp, err := b.cli.Get(ctx, b.slotPrefix(key), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			return lock.Holder{}, true, b.opError("break "+key, err)
		}
		if len(resp.Kvs) == 0 {
			return lock.Holder{}, false, nil
		}
		victims := resp.Kvs
		if token != 0 {
			victims = nil
			for _, kv := range resp.Kvs {
				var r record
				if json.Unmarshal(kv.Value, &r) == nil && r.Token == token {
					victims = append(victims, kv)
				}
			}
			if len(victims) == 0 {
				h := b.holderOf(ctx, key, resp.Kvs[0])
				return h, true, &lock.BusyError{Holder: h}
			}
		}
		h := b.holderOf(ctx, key, victims[0])
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for _, kv := range victims {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(string(kv.Key)), "=", kv.CreateRevision))
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
		tr, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return h, true, b.opError("break "+key, err)
		}
		if tr.Succeeded {
			return h, true, nil
		}
		// A holder left or came meanwhile: look again.
	}
	return lock.Holder{}, true, fmt.Errorf("the slots of %s keep changing; try again", key)
}

// SlotLease is a held slot of a semaphore: our slot key, attached to our
// own etcd lease. Renew and Release are the mutex lease's (they work on
// any key of ours, checked by its create revision).
type SlotLease struct {
	l    *Lease
	slot int
}

var (
	_ lock.Lease   = (*SlotLease)(nil)
	_ lock.Slotted = (*SlotLease)(nil)
)

func (s *SlotLease) Key() string        { return s.l.Key() }
func (s *SlotLease) Token() uint64      { return s.l.Token() }
func (s *SlotLease) Owner() string      { return s.l.Owner() }
func (s *SlotLease) Granted() time.Time { return s.l.Granted() }

// Slot implements lock.Slotted.
func (s *SlotLease) Slot() int { return s.slot }

// Alerts implements lock.Lease: etcd sends no news; renewals find out.
func (s *SlotLease) Alerts() <-chan struct{} { return nil }

// Hold implements lock.Lease (see Lease.Hold): the slot key moves to a
// lease of its own for d, keeping its create revision (the token) and its
// limit and slot.
func (s *SlotLease) Hold(ctx context.Context, d time.Duration, mode string) error {
	return s.l.Hold(ctx, d, mode)
}

// Handle implements lock.Lease.
func (s *SlotLease) Handle() lock.Handle { return s.l.Handle() }

// Renew implements lock.Lease (see Lease.Renew).
func (s *SlotLease) Renew(ctx context.Context) error { return s.l.Renew(ctx) }

// Release implements lock.Lease (see Lease.Release).
func (s *SlotLease) Release(ctx context.Context) error { return s.l.Release(ctx) }

// LeaseID is the etcd lease backing the slot (for diagnostics).
func (s *SlotLease) LeaseID() clientv3.LeaseID { return s.l.LeaseID() }

func encodeJSON(v any) string {
	b, _ := json.Marshal(v) // plain fields: cannot fail
	return string(b)
}
