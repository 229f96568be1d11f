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
// appear in an escaped key, and List skips it). The grant writes the
// counter and the holder's record (which carries the token, for status,
// list, break --token and handles) in the transaction that grants, only
// if the counter is below the new token or missing (grantOp): a
// compare-and-set, so tokens strictly rise even if two grants raced. A
// counter at or above it (a clock behind the last token) makes the grant
// try again with the counter + 1. Fixed-width digits make etcd's byte-wise
// value compare a numeric one.

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// grantAttempts bounds how often a grant is tried again because the
// counter was at or above the token it offered (each retry offers the
// counter + 1, so a second attempt fails only if another grant came in
// between, which the line's and the slots' compares already exclude).
const grantAttempts = 5

// tokenKey is where the last token of key is kept.
func (b *Backend) tokenKey(key string) string {
	return b.prefix + "/" + url.PathEscape(key) + "#token"
}

// tokenValue is how a token is stored: fixed width, so that comparing
// values byte by byte compares the numbers.
func tokenValue(t uint64) string { return fmt.Sprintf("%020d", t) }

// grantOp is the part of a granting transaction (whose own compares are
// the line's and the slots') that hands out token t of key: when the
// counter is below t, or missing, it sets the counter to t and applies
// ops (the holder's record, carrying t); otherwise it only reads the
// counter. grant reads its answer.
func (b *Backend) grantOp(key string, t uint64, ops ...clientv3.Op) clientv3.Op {
	tk, v := b.tokenKey(key), tokenValue(t)
	then := append([]clientv3.Op{clientv3.OpPut(tk, v)}, ops...)
	return clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value(tk), "<", v)},
		then,
		// etcd fails every value compare on a missing key: a second
		// compare for that case.
		[]clientv3.Op{clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(tk), "=", 0)},
			then,
			[]clientv3.Op{clientv3.OpGet(tk)},
		)},
	)
}

// grant runs a granting transaction: txn(t) commits it offering token t
// (lock.NextToken after last; its Then a grantOp). When its compares held
// but the counter was at or above t (a clock behind the last token), it
// is sent again offering the counter + 1. resp is the last answer: not
// Succeeded when the compares failed.
func grant(key string, last uint64, txn func(t uint64) (*clientv3.TxnResponse, error)) (*clientv3.TxnResponse, error) {
	for attempt := 1; ; attempt++ {
		resp, err := txn(lock.NextToken(last, lock.ClockMicros(time.Now())))
		if err != nil || !resp.Succeeded {
			return resp, err
		}
		// The grantOp's answer: its outer or inner transaction succeeded,
		// or the inner one read the counter.
		outer := resp.Responses[0].GetResponseTxn()
		if outer.GetSucceeded() {
			return resp, nil
		}
		if len(outer.GetResponses()) == 0 || len(outer.Responses[0].GetResponseTxn().GetResponses()) == 0 {
			return resp, fmt.Errorf("etcd gave no answer to the token's transaction")
		}
		inner := outer.Responses[0].GetResponseTxn()
		if inner.Succeeded {
			return resp, nil
		}
		if last, err = counterOf(key, inner.Responses[0]); err != nil {
			return resp, err
		}
		if attempt >= grantAttempts {
			return resp, fmt.Errorf("the token counter of %s kept moving", key)
		}
	}
}

// counterOf reads the counter from the answer to an OpGet of tokenKey
// (0 when missing).
func counterOf(key string, r *pb.ResponseOp) (uint64, error) {
	return parseCounter(key, r.GetResponseRange().GetKvs())
}

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
