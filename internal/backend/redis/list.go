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
	// fetchBatch is how many locks are read per pipelined round trip.
	fetchBatch = 200
)

// List implements lock.Backend with SCAN (never KEYS, which blocks the
// server). Lock hashes are "<prefix>:{<key>}" and always end in '}'; the
// fencing counters "<prefix>:{<key>}:token" never do, so the MATCH pattern
// ends in "}" and leaves them out. Keys may hold glob metacharacters
// (* ? [ ] \): they are escaped, so a prefix matches only itself.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	head := b.prefix + ":{"
	pattern := globEscape(head+keyPrefix) + "*}"
	var names []string
	seen := map[string]bool{}
	err := b.scan(ctx, pattern, func(name string) {
		if seen[name] { // SCAN may return a key more than once
			return
		}
		seen[name] = true
		inner, ok := strings.CutPrefix(name, head)
		if !ok || !strings.HasSuffix(inner, "}") {
			return
		}
		if key := inner[:len(inner)-1]; strings.HasPrefix(key, keyPrefix) && lock.ValidateKey(key) == nil {
			names = append(names, name)
		}
	})
	if err != nil {
		return nil, b.unavailable(err)
	}
	out := make([]lock.Holder, 0, len(names))
	for len(names) > 0 {
		n := min(len(names), fetchBatch)
		hs, err := b.records(ctx, names[:n], func(name string) string {
			return strings.TrimSuffix(strings.TrimPrefix(name, head), "}")
		})
		if err != nil {
			return nil, err
		}
		out = append(out, hs...)
		names = names[n:]
	}
	lock.SortHolders(out)
	return out, nil
}

// scan calls found (never concurrently) with every key matching pattern:
// on a cluster, on every master, each of which holds its own slots' keys.
func (b *Backend) scan(ctx context.Context, pattern string, found func(string)) error {
	one := func(ctx context.Context, c *goredis.Client, found func(string)) error {
		it := c.Scan(ctx, 0, pattern, scanCount).Iterator()
		for it.Next(ctx) {
			found(it.Val())
		}
		return it.Err()
	}
	switch c := b.c.(type) {
	case *goredis.ClusterClient:
		var mu sync.Mutex
		return c.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
			return one(ctx, c, func(name string) {
				mu.Lock()
				defer mu.Unlock()
				found(name)
			})
		})
	case *goredis.Client:
		return one(ctx, c, found)
	}
	return fmt.Errorf("redis: cannot scan with a %T", b.c)
}

// records reads the holder records (lock hashes, slots) named in one
// pipelined round trip, each the holder of key(name). A hash that vanished
// since it was named (released, expired) is left out, and so is anything
// that is not a record of ours (no owner field, wrong type).
func (b *Backend) records(ctx context.Context, names []string, key func(name string) string) ([]lock.Holder, error) {
	type pair struct {
		all  *goredis.MapStringStringCmd
		pttl *goredis.DurationCmd
	}
	cmds := make([]pair, len(names))
	_, err := b.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, name := range names {
			cmds[i] = pair{p.HGetAll(ctx, name), p.PTTL(ctx, name)}
		}
		return nil
	})
	var rerr goredis.Error
	if err != nil && !errors.As(err, &rerr) { // a server reply error (WRONGTYPE) concerns one key only
		return nil, b.unavailable(err)
	}
	var out []lock.Holder
	for i, name := range names {
		m, err := cmds[i].all.Result()
		if err != nil || m["owner"] == "" {
			continue
		}
		fields := make([]any, 0, 2*len(m))
		for k, v := range m {
			fields = append(fields, k, v)
		}
		var pttl any
		if d, err := cmds[i].pttl.Result(); err == nil && d >= 0 {
			pttl = d.Milliseconds()
		}
		out = append(out, parseHolder(key(name), fields, pttl))
	}
	return out, nil
}

// globEscape quotes the characters SCAN MATCH treats as glob syntax.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
