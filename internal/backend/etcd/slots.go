package etcd

import (
	"context"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// InspectSlots implements lock.SlotInspector: every slot key of key
// (semaphore.go) in one range read, sorted by slot; a mutex gives its one
// holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	resp, err := b.cli.Get(ctx, b.slotPrefix(key), clientv3.WithPrefix())
	if err != nil {
		return nil, b.opError("inspect "+key, err)
	}
	var out []lock.Holder
	for _, kv := range resp.Kvs {
		if h := b.holderOf(ctx, key, kv); h.Limit > 1 {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		h, held, err := b.Inspect(ctx, key)
		if err != nil || !held {
			return nil, err
		}
		return []lock.Holder{h}, nil
	}
	slices.SortFunc(out, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return out, nil
}
