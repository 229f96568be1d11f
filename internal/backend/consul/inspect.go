package consul

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Inspect implements lock.Backend: the first entry of the line describes
// the key (a semaphore by its oldest holder). The first in line that has
// not taken over yet shows token 0. Consul does not say how long another
// client's session has left: ExpiresIn is -1.
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	v, err := b.readKey(ctx, key)
	if err != nil || len(v.line) == 0 {
		return lock.Holder{}, false, err
	}
	return v.line[0].holder(key), true, nil
}

// InspectSlots implements lock.SlotInspector: every holder, by slot.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	v, err := b.readKey(ctx, key)
	if err != nil {
		return nil, err
	}
	var out []lock.Holder
	for _, e := range holders(v.line) {
		out = append(out, e.holder(key))
	}
	slices.SortFunc(out, func(a, b lock.Holder) int { return cmp.Compare(a.Slot, b.Slot) })
	return out, nil
}

// List implements lock.Backend: one read of every line under the root.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	var kvs api.KVPairs
	if err := b.call(func(c *api.Client) error {
		var err error
		kvs, _, err = c.KV().List(b.root+"/", qo(ctx))
		return err
	}); err != nil {
		return nil, b.opError("list", err)
	}
	byKey := map[string]api.KVPairs{}
	for _, kv := range kvs {
		seg, _, ok := strings.Cut(strings.TrimPrefix(kv.Key, b.root+"/"), "/")
		if ok && !strings.Contains(seg, "#") {
			byKey[seg] = append(byKey[seg], kv)
		}
	}
	var out []lock.Holder
	for seg, kvs := range byKey {
		key, ok := keyOf(seg)
		if !ok || !strings.HasPrefix(key, keyPrefix) {
			continue
		}
		if es := line(kvs, b.lineDir(key)); len(es) > 0 {
			out = append(out, es[0].holder(key))
		}
	}
	lock.SortHolders(out)
	return out, nil
}

// QueueLen is how many contenders wait behind the holders of key (the
// test harness's waitqueue).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	v, err := b.readKey(ctx, key)
	if err != nil {
		return 0, err
	}
	return int64(len(v.line) - len(holders(v.line))), nil
}
