package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// holderOf describes the contender kv of key from its record alone: its
// time left is unknown (-1) until describe asks.
func holderOf(key string, kv *mvccpb.KeyValue) lock.Holder {
	var r slotRecord // an older build's mutex contender has no limit nor slot
	if json.Unmarshal(kv.Value, &r) != nil {
		return lock.Holder{Key: key, ExpiresIn: -1}
	}
	return r.Describe(key, lock.Seat{Token: r.Token, Hold: r.Hold, Limit: r.Limit, Slot: r.Slot}, time.Time{})
}

// describe describes the contender kv of key, asking the server how long
// its lease has left; when that fails ExpiresIn stays -1 (unknown).
func (b *Backend) describe(ctx context.Context, key string, kv *mvccpb.KeyValue) lock.Holder {
	h := holderOf(key, kv)
	if kv.Lease == 0 {
		return h
	}
	resp, err := b.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return h
	}
	// etcd reports the remaining TTL in whole seconds, truncated: the real
	// remaining time is in [TTL, TTL+1s). Report the lower bound.
	h.ExpiresIn = time.Duration(max(resp.TTL, 0)) * time.Second // <0: expired, the key is about to go
	if h.TTL == 0 {
		h.TTL = time.Duration(resp.GrantedTTL) * time.Second
	}
	return h
}

// oldest is the contender among kvs (key's, in create revision order) that
// lock.Oldest names: the lowest token; nil when kvs is empty.
func oldest(key string, kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	hs := make([]lock.Holder, len(kvs))
	for i, kv := range kvs {
		hs[i] = holderOf(key, kv)
	}
	return kvs[slices.Index(hs, lock.Oldest(hs))]
}

// holding is what holds among kvs, the keys under the queue prefix qp in
// create revision order: the slot keys, or else the first older build's
// mutex contender, its holder; keys not ours are passed over (contender,
// slots.go).
func holding(qp string, kvs []*mvccpb.KeyValue) []*mvccpb.KeyValue {
	var slots, legacy []*mvccpb.KeyValue
	for _, kv := range kvs {
		switch _, isLegacy, ok := contender(qp, string(kv.Key)); {
		case !ok:
		case isLegacy:
			legacy = append(legacy, kv)
		default:
			slots = append(slots, kv)
		}
	}
	if len(slots) == 0 && len(legacy) > 0 {
		return legacy[:1]
	}
	return slots
}

// holdingKVs reads the keys of key's holders (holding).
func (b *Backend) holdingKVs(ctx context.Context, key, op string) ([]*mvccpb.KeyValue, error) {
	qp := b.queuePrefix(key)
	resp, err := b.cli.Get(ctx, qp, clientv3.WithPrefix(), byCreation)
	if err != nil {
		return nil, b.opError(op+key, err)
	}
	return holding(qp, resp.Kvs), nil
}

// holders reads the keys of key's holders and describes them.
func (b *Backend) holders(ctx context.Context, key, op string) ([]*mvccpb.KeyValue, []lock.Holder, error) {
	kvs, err := b.holdingKVs(ctx, key, op)
	hs := make([]lock.Holder, len(kvs))
	for i, kv := range kvs {
		hs[i] = b.describe(ctx, key, kv)
	}
	return kvs, hs, err
}

// byCreation sorts a range read by create revision, oldest first.
var byCreation = clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)

// Inspect implements lock.Backend: the oldest holder (lock.InspectOldest).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	return lock.InspectOldest(ctx, key, b.InspectSlots)
}

// InspectSlots implements lock.SlotInspector: every holder of key in one
// range read, sorted by slot; a mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	_, hs, err := b.holders(ctx, key, "inspect ")
	slices.SortFunc(hs, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return hs, err
}

// Break implements lock.Backend (lock.BreakHolders): each holder chosen is
// deleted on its own, compared on its create revision, whose token never
// changes, and on the lease it was read on (entry.ours). Only the key
// goes, not the lease: the holder's next Renew finds its key gone and
// reports lock.ErrNotHeld. The next waiter in line, if any, takes the slot.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	kvs, hs, err := b.holders(ctx, key, "break ")
	if err != nil {
		return lock.Holder{}, err
	}
	return lock.BreakHolders(key, hs, token, func(i int) (bool, error) {
		e := &entry{etcdKey: string(kvs[i].Key), rev: kvs[i].CreateRevision, id: clientv3.LeaseID(kvs[i].Lease)}
		tr, err := b.cli.Txn(ctx).If(e.ours()...).Then(clientv3.OpDelete(e.etcdKey)).Else(clientv3.OpGet(e.etcdKey, clientv3.WithKeysOnly())).Commit()
		if err != nil {
			return false, b.opError("break "+key, err)
		}
		if kvs := tr.Responses[0].GetResponseRange().GetKvs(); !tr.Succeeded && len(kvs) > 0 && kvs[0].CreateRevision == e.rev {
			// Still there, on another lease: its holder's hold moved it
			// (hold.go) since our read.
			return false, &lock.UnavailableError{Msg: fmt.Sprintf("break %s: its holder moved it to a new lease meanwhile; try again", key)}
		}
		return tr.Succeeded, nil
	})
}
