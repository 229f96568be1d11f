package consul

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"
)

// The run ledger (lock.Ledger) is kept apart from the lines, where List
// never looks: <root>#ledger/<url.PathEscape(KEY)>/<id>, plain KV keys on
// no session (they outlive every holder).
func (b *Backend) ledgerDir(key string) string {
	return b.root + "#ledger/" + url.PathEscape(key) + "/"
}

// PutEntry implements lock.Ledger.
func (b *Backend) PutEntry(ctx context.Context, key, id string, data []byte) error {
	_, _, _, err := b.txn(ctx, "write the ledger of "+key, api.TxnOps{kvOp(api.KVSet, b.ledgerDir(key)+id, data, 0, "")})
	return err
}

// Entries implements lock.Ledger.
func (b *Backend) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	kvs, _, err := b.list(b.ledgerDir(key), qo(ctx))
	if err != nil {
		return nil, b.opError("read the ledger of "+key, err)
	}
	out := make(map[string][]byte, len(kvs))
	for _, kv := range kvs {
		if id := strings.TrimPrefix(kv.Key, b.ledgerDir(key)); !strings.Contains(id, "/") {
			out[id] = kv.Value
		}
	}
	return out, nil
}

// DeleteEntries implements lock.Ledger: one transaction per 64 ids.
func (b *Backend) DeleteEntries(ctx context.Context, key string, ids []string) error {
	for chunk := range slices.Chunk(ids, 64) {
		var ops api.TxnOps
		for _, id := range chunk {
			ops = append(ops, kvOp(api.KVDelete, b.ledgerDir(key)+id, nil, 0, ""))
		}
		if _, _, _, err := b.txn(ctx, "delete from the ledger of "+key, ops); err != nil {
			return err
		}
	}
	return nil
}
