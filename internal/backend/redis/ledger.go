package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Ledger = (*Backend)(nil)

// ledgerKey is key's run ledger (lock.Ledger): a hash with no TTL, field
// = entry id, value = its bytes. It shares the lock's hash tag {key}, so
// a Cluster keeps it in the lock's slot, and it ends in ":ledger", never
// in '}' as every lock hash does: List's MATCH leaves it out, and no lock
// key (nor any other key of a lock, each with its own suffix) can be it.
func (b *Backend) ledgerKey(key string) string { return b.lockKey(key) + ":ledger" }

// PutEntry implements lock.Ledger (HSET). With wait=N, WAIT follows it on
// the same connection, as it follows a grant (replicas.go): a slot marked
// done on a master alone would be open again on a replica promoted by a
// failover, and a --once-per job would run twice. WAIT's timeout is 1s:
// the ledger has no TTL to take a tenth of.
func (b *Backend) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	return b.putEntry(ctx, key, id, data)
}

// putEntry stores data unchecked: Redlock's entries carry a version
// before the bytes it checked (redlock_ledger.go).
func (b *Backend) putEntry(ctx context.Context, key, id string, data []byte) error {
	var set goredis.Cmder
	nr := b.waited(ctx, time.Second, "the run ledger's write", func(p goredis.Pipeliner) goredis.Cmder {
		set = p.HSet(ctx, b.ledgerKey(key), id, data)
		return set
	})
	if err := set.Err(); err != nil {
		return b.unavailable(err)
	}
	if nr != nil {
		return &lock.UnavailableError{Msg: nr.Error(), Err: nr}
	}
	return nil
}

// Entries implements lock.Ledger (HGETALL).
func (b *Backend) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	m, err := b.c.HGetAll(ctx, b.ledgerKey(key)).Result()
	if err != nil {
		return nil, b.unavailable(err)
	}
	out := make(map[string][]byte, len(m))
	for id, data := range m {
		out[id] = []byte(data)
	}
	return out, nil
}

// DeleteEntries implements lock.Ledger (HDEL; the hash goes with its last
// field).
func (b *Backend) DeleteEntries(ctx context.Context, key string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := b.c.HDel(ctx, b.ledgerKey(key), ids...).Err(); err != nil {
		return b.unavailable(err)
	}
	return nil
}
