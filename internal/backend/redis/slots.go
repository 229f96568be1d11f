package redis

import (
	"context"

	"github.com/distlock/distlock/internal/lock"
)

// InspectSlots implements lock.SlotInspector: the lock hash gives the
// limit in use (a semaphore's marker, slots_lib.lua), then every slot hash
// is read in one pipelined round trip (all of them share the hash tag
// {KEY}, so one Cluster node serves them). A mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	h, held, err := b.Inspect(ctx, key)
	if err != nil || !held {
		return nil, err
	}
	if h.Limit <= 1 {
		return []lock.Holder{h}, nil
	}
	out, err := b.records(ctx, b.slotKeys(key, h.Limit)[1:], func(string) string { return key })
	if err != nil {
		return nil, err
	}
	if len(out) == 0 { // every slot expired since the marker was read
		return []lock.Holder{h}, nil
	}
	return out, nil
}
