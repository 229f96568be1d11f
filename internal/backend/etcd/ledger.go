package etcd

// The run ledger on etcd (lock.Ledger): one key per entry, with no lease
// (it outlives every holder), "<prefix>/#ledger/<url.PathEscape(KEY)>/<id>".
// Inside the prefix, so the readwrite permission a deployment grants on
// "<prefix>/" covers it, but in no lock's keys: an escaped key never
// starts with '#' nor holds a '/', so "<prefix>/#ledger/" is no key's
// queue prefix, counter or line. List passes over it (list.go). Entries
// are read with etcd's default, linearizable Get: the holder of a key that
// reads its ledger right after acquiring sees every entry written before
// the previous holder released.

import (
	"context"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Ledger = (*Backend)(nil)

// ledgerSegment is the first segment of the ledger's keys under the
// prefix: it sorts before every escaped key (url.PathEscape's output
// starts with '$' or above).
const ledgerSegment = "#ledger"

// deleteBatch bounds the deletes in one transaction (etcd refuses more
// than --max-txn-ops, 128 by default).
const deleteBatch = 64

// ledgerPrefix is "<prefix>/#ledger/<escaped key>/": every entry of key
// lives right under it and nothing else does.
func (b *Backend) ledgerPrefix(key string) string {
	return b.prefix + "/" + ledgerSegment + "/" + url.PathEscape(key) + "/"
}

// PutEntry implements lock.Ledger: one put, which creates or replaces.
func (b *Backend) PutEntry(ctx context.Context, key, id string, data []byte) error {
	if err := lock.CheckEntry(id, data); err != nil {
		return err
	}
	if _, err := b.cli.Put(ctx, b.ledgerPrefix(key)+id, string(data)); err != nil {
		return b.opError("write the ledger of "+key, err)
	}
	return nil
}

// Entries implements lock.Ledger: one linearizable range read.
func (b *Backend) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	lp := b.ledgerPrefix(key)
	resp, err := b.cli.Get(ctx, lp, clientv3.WithPrefix())
	if err != nil {
		return nil, b.opError("read the ledger of "+key, err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), lp)] = kv.Value
	}
	return out, nil
}

// DeleteEntries implements lock.Ledger: the deletes in transactions of at
// most deleteBatch (a missing key is no error to etcd; one named twice
// in a transaction is, so each id goes once).
func (b *Backend) DeleteEntries(ctx context.Context, key string, ids []string) error {
	lp := b.ledgerPrefix(key)
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for batch := range slices.Chunk(ids, deleteBatch) {
		ops := make([]clientv3.Op, len(batch))
		for i, id := range batch {
			ops[i] = clientv3.OpDelete(lp + id)
		}
		if _, err := b.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return b.opError("delete from the ledger of "+key, err)
		}
	}
	return nil
}
