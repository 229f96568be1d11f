package etcd

// Fencing tokens on etcd.
//
// The line keeps its order by create revision (fairness), but revisions
// start again at 1 when etcd loses its data (a rebuilt cluster, a restore
// from an older snapshot, a wiped server), so they are not the token. The
// token follows lock.NextToken from the last token of KEY, kept in a
// counter key with no lease (it outlives every holder), "...#token"
// (# Layout in etcd.go). A take writes the counter and the holder's record
// only if the counter is unchanged since its read (step.go): tokens
// strictly rise even if two takes raced.

import (
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// tokenValue is how a token is stored: 20 digits, fixed width, so that an
// older build's grant, which compares the values byte by byte, compares
// the numbers.
func tokenValue(t uint64) string { return fmt.Sprintf("%020d", t) }

// parseCounter reads the counter from a read of tokenKey (0 when missing).
func parseCounter(key string, kvs []*mvccpb.KeyValue) (uint64, error) {
	if len(kvs) == 0 {
		return 0, nil
	}
	t, err := strconv.ParseUint(string(kvs[0].Value), 10, 64)
	if v := kvs[0].Value; err != nil || len(v) != 20 {
		if len(v) > 40 {
			v = append(v[:40:40], "…"...)
		}
		return 0, fmt.Errorf("the token counter of %s (etcd key %s) holds %q, not a token: delete that key (the next token then follows the clock)", key, kvs[0].Key, v)
	}
	return t, nil
}
