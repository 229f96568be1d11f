package redis

import (
	"bytes"
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Ledger = (*Backend)(nil)

// ledgerKey is key's run ledger (lock.Ledger): a hash with no TTL, field
// = entry id, value = its bytes. It ends in ":ledger", never in '}' as
// every lock hash does, so List's MATCH leaves it out.
func (b *Backend) ledgerKey(key string) string { return b.lockKey(key) + ":ledger" }

// PutEntry implements lock.Ledger (HSET), followed by WAIT as a grant is
// (replicas.go): a slot marked done on a master alone would be open again
// on a promoted replica, and a --once-per job would run twice. WAIT's
// timeout is 1s: the ledger has no TTL to take a tenth of.
func (b *Backend) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	return b.putEntry(ctx, key, id, data)
}

// putEntry stores data unchecked: Redlock's entries carry a version
// before the bytes it checked (below).
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

// Redlock's run ledger (lock.Ledger): every master keeps the single-master
// hash (above), its values "<version>:<data>"; puts and deletes need a
// quorum, a read merges a quorum's answers, the greatest version winning,
// and repairs the masters that answered without it (docs/ARCHITECTURE.md,
// "Redlock's ledger", says why).

// ledgerTimeout bounds one master's part in a ledger call.
const ledgerTimeout = 5 * time.Second

// nextVersion hands out the versions of this Redlock's ledger writes by
// lock.NextToken's rule, so they rise strictly.
func (r *Redlock) nextVersion() uint64 {
	for {
		last := r.ledgerVer.Load()
		if v := lock.NextToken(last, lock.ClockMicros(time.Now())); r.ledgerVer.CompareAndSwap(last, v) {
			return v
		}
	}
}

// PutEntry implements lock.Ledger: on every master, a quorum must store it.
func (r *Redlock) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	v := append(strconv.AppendUint(nil, r.nextVersion(), 10), ':')
	v = append(v, data...)
	return r.onQuorum(ctx, ledgerTimeout, "stored the ledger entry "+id+" of "+key, func(ctx context.Context, _ int, n *Backend) error {
		return n.putEntry(ctx, key, id, v)
	})
}

// DeleteEntries implements lock.Ledger: on every master, a quorum must
// answer.
func (r *Redlock) DeleteEntries(ctx context.Context, key string, ids []string) error {
	return r.onQuorum(ctx, ledgerTimeout, "deleted ledger entries of "+key, func(ctx context.Context, _ int, n *Backend) error {
		return n.DeleteEntries(ctx, key, ids)
	})
}

// Entries implements lock.Ledger: the merge of a quorum's ledgers; equal
// versions pick the greater bytes, so every reader that sees both picks
// the same. Then it repairs the masters that answered (repair).
func (r *Redlock) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	all, errs := fan(ctx, r, ledgerTimeout, func(ctx context.Context, _ int, n *Backend) (map[string][]byte, error) {
		return n.Entries(ctx, key)
	})
	if err := r.quorumOf(errs, "answered"); err != nil {
		return nil, err
	}
	best := map[string][]byte{}
	for _, m := range all {
		for id, raw := range m {
			if old, seen := best[id]; !seen || newer(raw, old) {
				best[id] = raw
			}
		}
	}
	r.repair(ctx, key, all, errs, best)
	out := make(map[string][]byte, len(best))
	for id, raw := range best {
		_, out[id] = splitVersion(raw)
	}
	return out, nil
}

// repairTimeout bounds one master's part in a read-repair.
const repairTimeout = time.Second

// repair writes best (the merge, each value "<version>:<data>" as read)
// to every master that answered without it, or with an older version of
// it: an entry left on fewer masters than a quorum (a put while one was
// down, then another restarted empty) spreads back before the last that
// holds it is lost too, and a done --once-per slot stays done. Nothing
// is written where the masters agree; a master that does not answer in
// time is repaired by a later read; errors are not the read's.
//
// The rule: each write is a compare-and-set on what that master answered
// (ledger_repair.lua), so a repair never replaces a put made since. It
// can bring back an entry a trim deleted between the read and the repair
// (the trim found it on the masters that had it; the repair writes it to
// one that answered without it), as a delete that missed a master can:
// only an entry that was written comes back, it never reopens a slot,
// and the next trim deletes it again. Repairing only what a quorum holds
// would leave out the entry at risk, the one on fewer than a quorum
// (docs/ARCHITECTURE.md, "Redlock's ledger").
func (r *Redlock) repair(ctx context.Context, key string, all []map[string][]byte, errs []error, best map[string][]byte) {
	r.each(ctx, repairTimeout, func(ctx context.Context, k int, n *Backend) error {
		if errs[k] != nil {
			return nil
		}
		var args []any
		for id, raw := range best {
			was, has := all[k][id]
			if has && !newer(raw, was) {
				continue
			}
			answered := ""
			if has {
				answered = "=" + string(was)
			}
			args = append(args, id, answered, raw)
		}
		if len(args) == 0 {
			return nil
		}
		return ledgerRepairScript().Run(ctx, n.c, []string{n.ledgerKey(key)}, args...).Err()
	})
}

// newer says whether the master value a ("<version>:<data>") is a later
// write than b: the greater version, or on equal versions the greater
// bytes.
func newer(a, b []byte) bool {
	va, da := splitVersion(a)
	vb, db := splitVersion(b)
	return va > vb || va == vb && bytes.Compare(da, db) > 0
}

// splitVersion reads a master's "<version>:<data>"; a value without a
// version (not written by PutEntry) is all data, version 0.
func splitVersion(raw []byte) (int64, []byte) {
	head, data, ok := bytes.Cut(raw, []byte{':'})
	ver, err := strconv.ParseUint(string(head), 10, 63) // digits only, no sign
	if !ok || err != nil {
		return 0, raw
	}
	return int64(ver), data
}
