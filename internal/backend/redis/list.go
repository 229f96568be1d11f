package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

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
	if c, ok := b.c.(*goredis.ClusterClient); ok {
		return c.ForEachMaster(ctx, one)
	}
	return one(ctx, b.c.(*goredis.Client)) // open makes nothing else
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

// Inspect implements lock.Backend.
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	res, err := inspectScript().Run(ctx, b.c, []string{b.lockKey(key)}).Slice()
	if err != nil {
		return lock.Holder{}, false, b.unavailable(err)
	}
	if len(res) != 2 {
		return lock.Holder{}, false, fmt.Errorf("unexpected reply from the inspect script: %v", res)
	}
	if fields, _ := res[0].([]any); len(fields) == 0 {
		return lock.Holder{}, false, nil
	}
	return parseHolder(key, res[0], res[1]), true, nil
}

// Break implements lock.Backend by breakHolders over the holders
// InspectSlots reads, each released by release.lua, which checks the
// holder's owner id (one per acquisition) on its slot.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	held, err := b.InspectSlots(ctx, key)
	return breakHolders(key, held, err, token, func(h lock.Holder) error {
		return b.release(ctx, key, h.Owner, h.Slot, max(h.Limit, 1), b.channel(key))
	})
}

// breakHolders is lock.BreakHolders over held (err: why they could not be
// read), each removed by release; its ErrNotHeld leaves the holder alone:
// it let go meanwhile, or another has taken its slot since.
func breakHolders(key string, held []lock.Holder, err error, token uint64, release func(lock.Holder) error) (lock.Holder, error) {
	if err != nil {
		return lock.Holder{}, err
	}
	return lock.BreakHolders(key, held, token, func(i int) (bool, error) {
		err := release(held[i])
		if errors.Is(err, lock.ErrNotHeld) {
			return false, nil
		}
		return err == nil, err
	})
}

// parseHolder reads a holder record (the lock hash's or a slot's fields,
// as a flat name/value list or a map) and its PTTL in ms (<0 or nil:
// none).
func parseHolder(key string, fields, pttl any) lock.Holder {
	m, _ := fields.(map[string]string)
	if list, ok := fields.([]any); ok {
		m = make(map[string]string, len(list)/2)
		for i := 0; i+1 < len(list); i += 2 {
			m[fmt.Sprint(list[i])] = fmt.Sprint(list[i+1])
		}
	}
	h := lock.Holder{Key: key, Owner: m["owner"], Hold: m["hold"], ExpiresIn: -1,
		Meta: lock.Meta{Host: m["host"], User: m["user"], Command: m["cmd"], Note: m["note"]}}
	h.Token, _ = strconv.ParseUint(m["token"], 10, 64)
	h.Meta.PID, _ = strconv.Atoi(m["pid"])
	h.Limit, _ = strconv.Atoi(m["limit"]) // a semaphore's slot, or its marker (slots_lib.lua)
	h.Slot, _ = strconv.Atoi(m["slot"])
	if ms, err := strconv.ParseInt(m["acquired_ms"], 10, 64); err == nil {
		h.AcquiredAt = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(m["ttl_ms"], 10, 64); err == nil {
		h.TTL = time.Duration(ms) * time.Millisecond
	}
	if ms, ok := pttl.(int64); ok && ms >= 0 {
		h.ExpiresIn = time.Duration(ms) * time.Millisecond
	}
	return h
}
