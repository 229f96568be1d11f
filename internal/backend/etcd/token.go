package etcd

// Fencing tokens on etcd.
//
// The line keeps its order by create revision (fairness), but revisions
// start again at 1 when etcd loses its data (a rebuilt cluster, a restore
// from an older snapshot, a wiped server), so they are not the token. The
// token follows lock.NextToken: max(last token of KEY + 1, distlock's wall
// clock at the grant, in µs). The last token of KEY lives in a counter key
// with no lease, so that it outlives every holder:
//
//	<prefix>/<url.PathEscape(KEY)>#token    the last token, 20 decimal digits
//
// outside the key's queue prefix (like its line, '#' cannot
// appear in an escaped key, and List skips it). A take reads the counter
// (last) with the slots, and its transaction writes the counter and the
// holder's record (which carries the token, for status, list, break
// --token and handles) only if the counter's ModRevision is still at or
// below that read's revision (step.go): a compare-and-set, so tokens
// strictly rise even if two takes raced; a counter changed since makes the
// take read again. Fixed-width digits: an older build's grant compares the
// values byte by byte, which then compares the numbers.

import (
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// tokenValue is how a token is stored: fixed width, so that comparing
// values byte by byte compares the numbers.
func tokenValue(t uint64) string { return fmt.Sprintf("%020d", t) }

// parseCounter reads the counter from a read of tokenKey (0 when
// missing).
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
