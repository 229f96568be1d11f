package etcd

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// Look implements lock.LineStore. While the last read (or the watch: the
// slot it saw deleted) says a slot is free, it reads nothing and says to
// take it: the take's transaction asks whether anyone is still ahead of
// us, our key is still ours and no key under the queue prefix was put
// since that read (deletions only free slots; a put there is a slot taken,
// an older build's mutex contender, or a key not ours, of a longer
// --prefix nested in ours: the read that follows tells, contender).
// Otherwise it reads who is just ahead of us, our own key, the token
// counter and the slots (reads), at one revision.
func (w *waiter) Look(ctx context.Context) (lock.LineLook, error) {
	select {
	case i := <-w.freed:
		// First in line, the last Watch saw this slot deleted after our
		// last read: it is free if nothing was put under the queue prefix
		// since that read, which the take's compare checks. Only the next
		// take may use it: a later read makes it stale.
		w.free = i
	default:
	}
	w.freed = nil
	switch {
	case w.e == nil:
		return lock.LineLook{Lost: true}, nil
	case w.free >= 0 && !w.unread:
		return lock.LineLook{Free: 1}, nil
	case !w.unread:
		resp, err := w.b.cli.Txn(ctx).Then(w.reads()...).Commit()
		if err != nil {
			// A transient failure (leader change, timeout) is the wait
			// loop's to ride out; we keep our place and read again.
			return lock.LineLook{}, w.b.opError("wait for "+w.e.key, err)
		}
		if err := w.read(ctx, resp); err != nil {
			return lock.LineLook{}, err
		}
	}
	w.unread = false
	look := lock.LineLook{Lost: w.e == nil, Holder: w.holder}
	if w.ahead != nil {
		look.Ahead = 1
	}
	if w.free >= 0 {
		look.Free = 1
	}
	return look, nil
}

// Take implements lock.LineStore: the take's one transaction (take), with
// a keep-alive of our lease sent alongside (lock.TakeRenewed: validity
// counts from just before both, or from a later keep-alive that answers).
// A try-once sends no keep-alive: its lease counts from its grant.
func (w *waiter) Take(ctx context.Context) (lock.Lease, error) {
	var held *entry
	take := func(ctx context.Context) (err error) {
		held, err = w.take(ctx)
		return err
	}
	granted, err := w.granted, error(nil)
	if w.e.line == "" {
		err = take(ctx)
	} else {
		granted, err = lock.TakeRenewed(ctx, w.req.TTL, w.Keeper(), take)
	}
	switch {
	case errors.Is(err, lock.ErrNotHeld):
		w.Leave() // our lease is gone: join again at once
		return nil, lock.ErrLookAgain
	case err != nil:
		return nil, err
	}
	w.e = nil
	return w.b.newLease(held, granted), nil
}

// take puts the free slot (Look) on our lease, deletes our waiter key and
// raises the token counter (token.go), if no key under the queue prefix
// was put and the counter not changed since our read, nobody is ahead of
// us in line and our key is still ours; otherwise it reads instead
// (reads), for the next Look. A try-once's take requires nobody in line
// and has no waiter key to delete.
func (w *waiter) take(ctx context.Context) (*entry, error) {
	e, b := w.e, w.b
	tk := b.tokenKey(e.key)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(b.queuePrefix(e.key)).WithPrefix(), "<", w.readRev+1),
		clientv3.Compare(clientv3.ModRevision(tk), "<", w.readRev+1),                        // the counter is w.last
		clientv3.Compare(clientv3.CreateRevision(b.linePrefix(e.key)), "=", 0).WithPrefix(), // nobody in line
	}
	held := &entry{key: e.key, etcdKey: b.slotPrefix(e.key) + strconv.Itoa(w.free), id: e.id, rec: e.rec}
	r := &held.rec
	r.Limit, r.Slot, r.AcquiredAt, r.QueuedAt, r.Token = w.req.Limit, w.free, time.Now(), time.Time{}, lock.NextToken(w.last, lock.ClockMicros(time.Now()))
	ops := []clientv3.Op{clientv3.OpPut(held.etcdKey, r.value(), clientv3.WithLease(e.id)), clientv3.OpPut(tk, tokenValue(r.Token))}
	if e.line != "" {
		cmps[2] = clientv3.Compare(clientv3.CreateRevision(e.line), ">", e.rev-1).WithPrefix() // every key of the line created at or after ours
		cmps = append(cmps, e.ours()...)
		ops = append(ops, clientv3.OpDelete(e.etcdKey))
	}
	resp, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Else(w.reads()...).Commit()
	switch {
	case e.line != "" && errors.Is(err, rpctypes.ErrLeaseNotFound):
		return nil, lock.ErrNotHeld
	case err != nil:
		return nil, b.opError("wait for "+e.key, err)
	case !resp.Succeeded:
		if err := w.read(ctx, resp); err != nil {
			return nil, err
		}
		w.unread = true
		return nil, lock.ErrLookAgain
	}
	held.rev = resp.Header.Revision // the slot key, created by the take
	return held, nil
}

// reads are a look's reads: the token counter, every key under the queue
// prefix (the slots), the one just ahead of us in line (a try-once: the
// first in line) and our own key.
func (w *waiter) reads() []clientv3.Op {
	e, b := w.e, w.b
	ops := []clientv3.Op{
		clientv3.OpGet(b.tokenKey(e.key)),
		clientv3.OpGet(b.queuePrefix(e.key), clientv3.WithPrefix(), byCreation),
		clientv3.OpGet(b.linePrefix(e.key), clientv3.WithFirstCreate()...),
	}
	if e.line != "" {
		ops[2] = clientv3.OpGet(e.line, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(e.rev-1))...)
		ops = append(ops, clientv3.OpGet(e.etcdKey)) // with its lease (entry.readOurs): not WithKeysOnly
	}
	return ops
}

// read takes in the answer to reads (our place is dropped when our key is
// gone); a *lock.LimitMismatchError when the holders use another limit.
func (w *waiter) read(ctx context.Context, resp *clientv3.TxnResponse) error {
	r := resp.Responses
	if w.e.line != "" {
		if !w.e.readOurs(r[3].GetResponseRange().Kvs) {
			w.Leave() // our key was deleted: join again at once
			return nil
		}
	}
	var err error
	if w.last, err = parseCounter(w.req.Key, r[0].GetResponseRange().Kvs); err != nil {
		return w.b.opError("wait for "+w.req.Key, err)
	}
	sr, err := readSlots(w.req, w.b.queuePrefix(w.req.Key), r[1].GetResponseRange().Kvs)
	if err != nil {
		return err
	}
	// Only a read taken in whole moves readRev: the take compares the
	// counter's and the line's revisions with it, counting on w.last and
	// w.free being what was read there.
	w.readRev = resp.Header.Revision
	w.free, w.legacy, w.ahead = sr.free, sr.legacy, nil
	if ahead := r[2].GetResponseRange().Kvs; len(ahead) > 0 {
		w.ahead = ahead[0]
	}
	switch {
	case sr.oldest != nil:
		w.name(ctx, sr.oldest)
	case w.ahead != nil && w.e.line == "": // a try-once names the first waiter, who holds nothing yet
		w.shown, w.holder = nil, lock.Holder{Key: w.req.Key, Meta: holderOf(w.req.Key, w.ahead).Meta, ExpiresIn: -1}
	}
	return nil
}

// name names the holder kv (asking etcd for its time left only when it
// changed). A holder that has no token yet is an older build's waiter
// taking over from the holder that just left: lock.Line names the last
// holder instead until it has taken the lock.
func (w *waiter) name(ctx context.Context, kv *mvccpb.KeyValue) {
	if w.shown == nil || w.shown.CreateRevision != kv.CreateRevision || w.shown.ModRevision != kv.ModRevision {
		w.shown, w.holder = kv, w.b.describe(ctx, w.req.Key, kv)
	}
}
