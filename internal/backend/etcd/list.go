package etcd

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// List implements lock.Backend with one range read under the prefix. The
// holder of a key is its first key by create revision, as Inspect sees
// it: a slot "<esc>/slot/<i>" (the oldest), or an older build's mutex
// contender "<esc>/<lease ID in hex>" (slots.go). url.PathEscape
// maps each byte on its own, so the escaped keys of the keys starting with
// keyPrefix are exactly those starting with the escaped keyPrefix.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	base := b.prefix + "/"
	from, scope := base+url.PathEscape(keyPrefix), clientv3.WithPrefix()
	if keyPrefix == "" {
		// Every key: from the first byte an escaped key can start with,
		// past the run ledger's entries ("<prefix>/#ledger/", ledger.go),
		// which List would pass over anyway, after reading them whole.
		from, scope = base+"$", clientv3.WithRange(clientv3.GetPrefixRangeEnd(base))
	}
	resp, err := b.cli.Get(ctx, from, scope, clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, b.opError("list", err)
	}
	first := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), base)
		esc, id, ok := strings.Cut(rest, "/")
		if !ok || !contenderID(id) || strings.Contains(esc, "#") {
			continue // not a lock key of ours ('#': a waiter, line.go)
		}
		key, err := url.PathUnescape(esc)
		if err != nil || !strings.HasPrefix(key, keyPrefix) {
			continue
		}
		if _, seen := first[key]; !seen {
			first[key] = kv // ascending create revision: the first is the holder
		}
	}
	out := make([]lock.Holder, 0, len(first))
	for key, kv := range first {
		out = append(out, b.holderOf(ctx, key, kv))
	}
	lock.SortHolders(out)
	return out, nil
}

// contenderID accepts the last part of a contender key: a lease ID in hex
// (an older build's mutex) or "slot/<i>".
func contenderID(id string) bool {
	if n, ok := strings.CutPrefix(id, "slot/"); ok {
		_, err := strconv.Atoi(n)
		return err == nil
	}
	if strings.Contains(id, "/") {
		return false
	}
	_, err := strconv.ParseUint(id, 16, 64)
	return err == nil
}
