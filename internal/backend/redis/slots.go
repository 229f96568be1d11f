package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// InspectSlots implements lock.SlotInspector: the marker (the key's lock
// hash, sem_lib.lua) gives the limit in use, then every slot hash is read
// in one pipelined round trip (all of them share the hash tag {KEY}, so
// one Cluster node serves them). A mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	h, held, err := b.Inspect(ctx, key)
	if err != nil || !held {
		return nil, err
	}
	if h.Limit <= 1 {
		return []lock.Holder{h}, nil
	}
	type pair struct {
		all  *goredis.MapStringStringCmd
		pttl *goredis.DurationCmd
	}
	cmds := make([]pair, h.Limit)
	_, err = b.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i := range cmds {
			name := b.slotKey(key, i, h.Limit)
			cmds[i] = pair{p.HGetAll(ctx, name), p.PTTL(ctx, name)}
		}
		return nil
	})
	var rerr goredis.Error
	if err != nil && !errors.As(err, &rerr) {
		return nil, b.unavailable(err)
	}
	var out []lock.Holder
	for i, c := range cmds {
		m, err := c.all.Result()
		if err != nil || m["owner"] == "" {
			continue // free, or expired since the marker was read
		}
		fields := make([]any, 0, 2*len(m))
		for k, v := range m {
			fields = append(fields, k, v)
		}
		var pttl any
		if d, err := c.pttl.Result(); err == nil && d >= 0 {
			pttl = d.Milliseconds()
		}
		s := parseHolder(key, fields, pttl)
		s.Slot, s.Limit = i, max(s.Limit, h.Limit)
		out = append(out, s)
	}
	if len(out) == 0 {
		return []lock.Holder{h}, nil
	}
	return out, nil
}
