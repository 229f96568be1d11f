package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

const (
	// scanCount is SCAN's COUNT hint: keys examined per round trip.
	scanCount = 1000
	// fetchBatch is how many records are read per pipelined round trip.
	fetchBatch = 200
)

// List implements lock.Backend with SCAN (never KEYS, which blocks the
// server). Lock hashes are "<prefix>:{<key>}" and always end in '}'; the
// fencing counters "<prefix>:{<key>}:token" never do, so the MATCH pattern
// ends in "}" and leaves them out. Keys may hold glob metacharacters
// (* ? [ ] \): they are escaped, so a prefix matches only itself. A
// semaphore's lock hash is its marker, which describes its oldest holder.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	head := b.prefix + ":{"
	var names []string
	err := b.scan(ctx, globEscape(head+keyPrefix)+"*}", func(name string) {
		if strings.HasPrefix(name, head) && strings.HasSuffix(name, "}") {
			names = append(names, name)
		}
	})
	if err != nil {
		return nil, b.unavailable(err)
	}
	hs, err := b.records(ctx, names, func(name string) string { return name[len(head) : len(name)-1] })
	if err != nil {
		return nil, err
	}
	return lock.ListOldest(keyPrefix, hs), nil // SCAN may name a key twice: one holder per key
}

// scan calls found (never concurrently) with every key matching pattern:
// on a cluster, on every master, each of which holds its own slots' keys.
func (b *Backend) scan(ctx context.Context, pattern string, found func(string)) error {
	var mu sync.Mutex
	one := func(ctx context.Context, c *goredis.Client) error {
		it := c.Scan(ctx, 0, pattern, scanCount).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			found(it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	switch c := b.c.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, one)
	case *goredis.Client:
		return one(ctx, c)
	}
	return fmt.Errorf("redis: cannot scan with a %T", b.c)
}

// records reads the holder records (lock hashes, slots) named, fetchBatch
// to a pipelined round trip, each the holder of key(name). A hash that
// vanished since it was named (released, expired) is left out, and so is
// anything that is not a record of ours (no owner field, wrong type).
func (b *Backend) records(ctx context.Context, names []string, key func(name string) string) ([]lock.Holder, error) {
	var out []lock.Holder
	for len(names) > 0 {
		batch := names[:min(len(names), fetchBatch)]
		names = names[len(batch):]
		all := make([]*goredis.MapStringStringCmd, len(batch))
		pttl := make([]*goredis.Cmd, len(batch))
		_, err := b.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, name := range batch {
				all[i], pttl[i] = p.HGetAll(ctx, name), p.Do(ctx, "PTTL", name)
			}
			return nil
		})
		var rerr goredis.Error
		if err != nil && !errors.As(err, &rerr) { // a server reply error (WRONGTYPE) concerns one key only
			return nil, b.unavailable(err)
		}
		for i, name := range batch {
			if m, err := all[i].Result(); err == nil && m["owner"] != "" {
				out = append(out, parseHolder(key(name), m, pttl[i].Val()))
			}
		}
	}
	return out, nil
}

// globEscape quotes the characters SCAN MATCH treats as glob syntax.
var globEscape = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace

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
