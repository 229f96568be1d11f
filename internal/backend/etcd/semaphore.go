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
// is refused with a *lock.LimitMismatchError (step.go, describe); semaphore
// acquirers that come after a queued mutex contender are refused too.
//
// # Waiting
//
// Semaphore waiters queue in arrival order, each in a key of its own
// outside the queue prefix, "<prefix>/<url.PathEscape(KEY)>#wait/<lease ID
// in hex>" (join.go), and wait and take their slot by the mutex's code
// (contend.go, step.go). A try-once takes a slot only while no waiter is
// in line (a compare in the taking transaction): it never jumps the line,
// and never joins it.

import (
	"context"
	"encoding/json"
	"errors"
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

// trySlot is a semaphore's try-once (each Try before its first Wait): it
// grants a lease and takes the lowest free slot with it (takeSlot); when
// every slot is held, or others wait in line, it revokes the lease and the
// answer is busy, naming the oldest holder.
func (c *contender) trySlot(ctx context.Context) (lock.Lease, error) {
	granted := time.Now()
	g, err := c.b.cli.Grant(ctx, leaseSeconds(c.req.TTL))
	if err != nil {
		return nil, c.b.opError("grant a lease for "+c.req.Key, err)
	}
	l, err := c.b.takeSlot(ctx, c.req, g.ID, granted)
	if err != nil {
		// The put may have been applied if the reply was lost: revoking the
		// lease removes it.
		c.b.revoke(ctx, g.ID)
		var busy *lock.BusyError
		if errors.As(err, &busy) {
			c.holder = busy.Holder
		}
		return nil, err
	}
	return l, nil
}

// takeSlot reads the slots, the line and the token counter at one
// revision and takes the lowest free slot on lease id, in a transaction
// that requires no key under the queue prefix put since that read and
// nobody in line: a try-once never jumps the line. On a conflict it reads
// again.
func (b *Backend) takeSlot(ctx context.Context, req lock.Request, id clientv3.LeaseID, granted time.Time) (lock.Lease, error) {
	qp, wp := b.queuePrefix(req.Key), b.semWaitPrefix(req.Key)
	for {
		resp, err := b.cli.Txn(ctx).Then(
			clientv3.OpGet(qp, clientv3.WithPrefix()),
			clientv3.OpGet(wp, clientv3.WithFirstCreate()...),
			clientv3.OpGet(b.tokenKey(req.Key)),
		).Commit()
		if err != nil {
			return nil, b.opError("read the slots of "+req.Key, err)
		}
		rev := resp.Header.Revision
		last, err := counterOf(req.Key, resp.Responses[2])
		if err != nil {
			return nil, b.opError("read the slots of "+req.Key, err)
		}
		sr, err := readSlots(req, qp, resp.Responses[0].GetResponseRange().Kvs)
		if err != nil {
			return nil, err
		}
		if waiters := resp.Responses[1].GetResponseRange().Kvs; len(waiters) > 0 || sr.free < 0 {
			// Full, or others wait in line: a try-once does not jump it.
			return nil, &lock.BusyError{Holder: b.semBusyHolder(ctx, req.Key, sr.oldest, waiters)}
		}
		var held *entry
		tr, err := grant(req.Key, last, func(t uint64) (*clientv3.TxnResponse, error) {
			var put clientv3.Op
			held, put = b.slotTake(req.Key, newRecord(req, time.Now()), req.Limit, sr.free, id, t)
			return b.cli.Txn(ctx).
				If(
					clientv3.Compare(clientv3.ModRevision(qp).WithPrefix(), "<", rev+1),
					clientv3.Compare(clientv3.CreateRevision(wp).WithPrefix(), "=", 0), // nobody in line
				).
				Then(b.grantOp(req.Key, t, put)).
				Commit()
		})
		if err != nil {
			return nil, b.opError("take a slot of "+req.Key, err)
		}
		if tr.Succeeded {
			held.rev = tr.Header.Revision
			return b.newLease(held, granted), nil
		}
		// Someone changed the key's slots, queue or line since our read:
		// read again, after a moment so that racing acquirers spread out.
		t := time.NewTimer(time.Duration(rand.Int64N(int64(5 * time.Millisecond))))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, b.opError("take a slot of "+req.Key, ctx.Err())
		case <-t.C:
		}
	}
}

// slotTake is what taking slot i of key with token t on lease id, for the
// contender of record rec, puts: the entry then held (its create revision
// is the take's) and the put.
func (b *Backend) slotTake(key string, rec record, limit, i int, id clientv3.LeaseID, t uint64) (*entry, clientv3.Op) {
	sr := &slotRecord{record: rec, Limit: limit, Slot: i}
	sr.AcquiredAt, sr.QueuedAt, sr.Token = time.Now(), time.Time{}, t
	h := &entry{key: key, etcdKey: b.slotPrefix(key) + strconv.Itoa(i), id: id, token: t, rec: sr.record, slot: sr}
	return h, clientv3.OpPut(h.etcdKey, encodeJSON(sr), clientv3.WithLease(id))
}

// slotLimit is the limit of kv when it is a slot holder of key with a limit
// above 1, else 0.
func (b *Backend) slotLimit(key string, kv *mvccpb.KeyValue) int {
	var rec slotRecord
	if strings.HasPrefix(string(kv.Key), b.slotPrefix(key)) && json.Unmarshal(kv.Value, &rec) == nil && rec.Limit > 1 {
		return rec.Limit
	}
	return 0
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

func encodeJSON(v any) string {
	b, _ := json.Marshal(v) // plain fields: cannot fail
	return string(b)
}
