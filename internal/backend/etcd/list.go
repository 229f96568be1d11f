package etcd

import (
	"context"
	"net/url"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// List implements lock.Backend with one range read under the prefix: each
// key is described by its oldest holder, as Inspect does (holding,
// oldest). url.PathEscape maps each byte on its own, so the escaped keys
// of the keys starting with keyPrefix are exactly those starting with the
// escaped keyPrefix.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	base := b.prefix + "/"
	from, scope := base+url.PathEscape(keyPrefix), clientv3.WithPrefix()
	if keyPrefix == "" {
		// Every key: from the first byte an escaped key can start with,
		// past the run ledger's entries ("<prefix>/#ledger/", ledger.go),
		// which List would pass over anyway, after reading them whole.
		from, scope = base+"$", clientv3.WithRange(clientv3.GetPrefixRangeEnd(base))
	}
	resp, err := b.cli.Get(ctx, from, scope, byCreation)
	if err != nil {
		return nil, b.opError("list", err)
	}
	byKey := map[string][]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		esc, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), base), "/")
		if _, _, ok := contender(base+esc+"/", string(kv.Key)); !ok || strings.Contains(esc, "#") {
			continue // not a lock key of ours ('#': a waiter, contend.go)
		}
		if key, err := url.PathUnescape(esc); err == nil && strings.HasPrefix(key, keyPrefix) {
			byKey[key] = append(byKey[key], kv)
		}
	}
	out := make([]lock.Holder, 0, len(byKey))
	for key, kvs := range byKey {
		out = append(out, b.describe(ctx, key, oldest(key, holding(b.queuePrefix(key), kvs))))
	}
	lock.SortHolders(out)
	return out, nil
}
