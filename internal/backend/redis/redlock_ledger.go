package redis

// Redlock's run ledger (lock.Ledger): every master keeps the single-master
// hash (ledger.go); puts and deletes need a quorum, a read merges a
// quorum's answers, every id any of them has, the greatest version
// winning where they disagree (docs/ARCHITECTURE.md, "Redlock's ledger",
// says why neither a majority of the answers nor the masters' order
// would do). Each master stores "<version>:<data>", version a µs clock
// that rises strictly within this process (ledgerClock); equal versions
// pick the greater bytes, so every reader that sees both picks the same.

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// ledgerTimeout bounds one master's part in a ledger call.
const ledgerTimeout = 5 * time.Second

// ledgerClock hands out the versions of a Redlock's ledger writes:
// max(last + 1, the wall clock in µs), so they rise strictly.
type ledgerClock struct {
	mu   sync.Mutex
	last int64
}

func (c *ledgerClock) next() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last+1, time.Now().UnixMicro())
	return c.last
}

// PutEntry implements lock.Ledger: on every master, a quorum must store it.
func (r *Redlock) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	v := append(strconv.AppendInt(nil, r.ledgerVer.next(), 10), ':')
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

// Entries implements lock.Ledger: the merge of a quorum's ledgers (see
// the top of this file).
func (r *Redlock) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	all, errs := fan(ctx, r, ledgerTimeout, func(ctx context.Context, _ int, n *Backend) (map[string][]byte, error) {
		return n.Entries(ctx, key)
	})
	if err := r.quorumOf(errs, "answered"); err != nil {
		return nil, err
	}
	out, vers := map[string][]byte{}, map[string]int64{}
	for _, m := range all {
		for id, raw := range m {
			ver, data := splitVersion(raw)
			if old, seen := vers[id]; !seen || ver > old || ver == old && bytes.Compare(data, out[id]) > 0 {
				out[id], vers[id] = data, ver
			}
		}
	}
	return out, nil
}

// splitVersion reads a master's "<version>:<data>"; a value without a
// version (not written by PutEntry) is all data, version 0.
func splitVersion(raw []byte) (int64, []byte) {
	head, data, ok := bytes.Cut(raw, []byte{':'})
	if !ok || len(head) == 0 || strings.Trim(string(head), "0123456789") != "" {
		return 0, raw
	}
	ver, err := strconv.ParseInt(string(head), 10, 64)
	if err != nil {
		return 0, raw
	}
	return ver, data
}
