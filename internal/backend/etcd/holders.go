package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// holderOf describes the contender kv (of key). It asks the server how long
// its lease has left; when that fails ExpiresIn is -1 (unknown).
func (b *Backend) holderOf(ctx context.Context, key string, kv *mvccpb.KeyValue) lock.Holder {
	h := lock.Holder{Key: key, ExpiresIn: -1}
	var r slotRecord // an older build's mutex contender has no limit nor slot
	if err := json.Unmarshal(kv.Value, &r); err == nil {
		h = r.Holder(key)
		h.Token = r.Token
		h.Hold = r.Hold
		if r.Limit > 1 {
			h.Limit, h.Slot = r.Limit, r.Slot
		}
	}
	if kv.Lease == 0 {
		return h
	}
	resp, err := b.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return h
	}
	// etcd reports the remaining TTL in whole seconds, truncated: the real
	// remaining time is in [TTL, TTL+1s). Report the lower bound.
	if resp.TTL < 0 {
		h.ExpiresIn = 0 // expired: the key is about to go
	} else {
		h.ExpiresIn = time.Duration(resp.TTL) * time.Second
	}
	if h.TTL == 0 {
		h.TTL = time.Duration(resp.GrantedTTL) * time.Second
	}
	return h
}

// Inspect reports the holder of key: the contender with the lowest create
// revision.
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	resp, err := b.cli.Get(ctx, b.queuePrefix(key), clientv3.WithFirstCreate()...)
	if err != nil {
		return lock.Holder{}, false, b.opError("inspect "+key, err)
	}
	if len(resp.Kvs) == 0 {
		return lock.Holder{}, false, nil
	}
	return b.holderOf(ctx, key, resp.Kvs[0]), true, nil
}

// InspectSlots implements lock.SlotInspector: every holder of key in one
// range read, sorted by slot; a mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	kvs, err := b.holders(ctx, key, "inspect ")
	var out []lock.Holder
	for _, kv := range kvs {
		out = append(out, b.holderOf(ctx, key, kv))
	}
	slices.SortFunc(out, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return out, err
}

// Break deletes holders' keys (not their leases: a holder's next Renew
// finds its key gone and reports lock.ErrNotHeld), each compared on its
// create revision, whose token never changes. With token != 0 only the
// holder with that token (its record's), or a *lock.BusyError naming the
// oldest holder when none has it; with token 0 every holder, and it
// returns the oldest. The next waiter in line, if any, takes the slot.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	for range 5 {
		holders, err := b.holders(ctx, key, "break ")
		if err != nil {
			return lock.Holder{}, err
		}
		victims := holders
		if token != 0 {
			victims = slices.DeleteFunc(slices.Clone(holders), func(kv *mvccpb.KeyValue) bool {
				var r record
				return json.Unmarshal(kv.Value, &r) != nil || r.Token != token
			})
		}
		if len(victims) == 0 { // not held, or busy naming the oldest holder left
			var left []lock.Holder
			if len(holders) > 0 {
				left = []lock.Holder{b.holderOf(ctx, key, holders[0])}
			}
			return lock.BreakAnswer(key, nil, left)
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
			return h, b.opError("break "+key, err)
		}
		if tr.Succeeded {
			return h, nil
		}
		// A holder left or came meanwhile: look again.
	}
	return lock.Holder{}, b.opError("break "+key, errors.New("the holders keep changing; try again"))
}

// holders reads the keys of key's holders, oldest first: its slot keys,
// or else the first key under the queue prefix, an older build's mutex
// holder (slots.go).
func (b *Backend) holders(ctx context.Context, key, op string) ([]*mvccpb.KeyValue, error) {
	qp := b.queuePrefix(key)
	resp, err := b.cli.Get(ctx, qp, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, b.opError(op+key, err)
	}
	slots := slices.DeleteFunc(slices.Clone(resp.Kvs), func(kv *mvccpb.KeyValue) bool {
		return !strings.HasPrefix(string(kv.Key), qp+"slot/")
	})
	if len(slots) == 0 && len(resp.Kvs) > 0 {
		return resp.Kvs[:1], nil
	}
	return slots, nil
}
