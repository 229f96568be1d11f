package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
)

// entry is our place in a key's queue.
type entry struct {
	key     string // user's key
	qp      string // queue prefix
	etcdKey string // our contender key
	id      clientv3.LeaseID
	rev     int64 // create revision of etcdKey: the fencing token
	rec     record
}

// cleanupTimeout caps the fresh context used to leave the queue.
const cleanupTimeout = 2 * time.Second

// errLostPlace: our lease expired or our key was deleted while we waited.
var errLostPlace = errors.New("lost our place in the etcd queue")

func checkRequest(req lock.Request) error {
	if err := lock.ValidateKey(req.Key); err != nil {
		return err
	}
	if req.TTL <= 0 {
		return lock.Invalidf("ttl must be positive (got %s)", req.TTL)
	}
	return nil
}

// enqueue grants a lease and puts our contender key with it, reading the
// queue's first contender in the same transaction. granted is the
// monotonic time taken just before the grant was sent.
func (b *Backend) enqueue(ctx context.Context, req lock.Request) (e *entry, first *mvccpb.KeyValue, granted time.Time, err error) {
	qp := b.queuePrefix(req.Key)
	granted = time.Now()
	g, err := b.cli.Grant(ctx, leaseSeconds(req.TTL))
	if err != nil {
		return nil, nil, granted, b.opError("grant a lease for "+req.Key, err)
	}
	e = &entry{
		key:     req.Key,
		qp:      qp,
		etcdKey: fmt.Sprintf("%s%x", qp, int64(g.ID)),
		id:      g.ID,
		rec:     newRecord(req, time.Now()),
	}
	resp, err := b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", 0)).
		Then(
			clientv3.OpPut(e.etcdKey, e.rec.encode(), clientv3.WithLease(e.id)),
			clientv3.OpGet(qp, clientv3.WithFirstCreate()...),
		).
		Commit()
	if err != nil {
		// The put may have been applied: revoking the lease removes it.
		b.cleanup(ctx, e)
		return nil, nil, granted, b.opError("join the queue of "+req.Key, err)
	}
	if !resp.Succeeded {
		b.cleanup(ctx, e) // a fresh lease's key cannot exist; be safe anyway
		return nil, nil, granted, b.opError("join the queue of "+req.Key, fmt.Errorf("key %s already exists", e.etcdKey))
	}
	e.rev = resp.Header.Revision
	kvs := resp.Responses[1].GetResponseRange().Kvs
	if len(kvs) == 0 { // cannot happen: our own key is in the range
		b.cleanup(ctx, e)
		return nil, nil, granted, b.opError("join the queue of "+req.Key, errors.New("own key not found in the queue"))
	}
	return e, kvs[0], granted, nil
}

// cleanup leaves the queue: revoking our lease deletes our key with it, in
// one request. It runs on a fresh short context, since ctx may be the
// one that just ended; if the revoke fails we fall back to a plain delete,
// and failing that the lease expires on its own after TTL.
func (b *Backend) cleanup(ctx context.Context, e *entry) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.dialTO, cleanupTimeout))
	defer cancel()
	if _, err := b.cli.Revoke(cctx, e.id); err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return
	}
	_, _ = b.cli.Delete(cctx, e.etcdKey)
}

func (b *Backend) newLease(e *entry, granted time.Time) *Lease {
	return &Lease{b: b, e: e, granted: granted}
}

// TryAcquire joins the queue and keeps the lock if it is first; otherwise it
// leaves at once and returns a *lock.BusyError naming the holder.
func (b *Backend) TryAcquire(ctx context.Context, req lock.Request) (lock.Lease, error) {
	if req.Limit > 1 {
		return b.trySemaphore(ctx, req)
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	e, first, granted, err := b.enqueue(ctx, req)
	if err != nil {
		return nil, err
	}
	if first.CreateRevision == e.rev {
		return b.newLease(e, granted), nil
	}
	b.cleanup(ctx, e)
	return nil, &lock.BusyError{Holder: b.holderOf(ctx, req.Key, first)}
}

// Acquire queues for the lock in arrival order and blocks until it is ours,
// ctx ends or an error occurs. When ctx's deadline passes it leaves the
// queue and returns a *lock.BusyError naming the holder; when ctx is
// cancelled it leaves and returns ctx's error. progress (may be nil) is
// called with the holder whenever it changes.
//
// If our place is lost while waiting (our lease expired, say during a long
// partition, or someone deleted our key), we join again at the back.
func (b *Backend) Acquire(ctx context.Context, req lock.Request, progress func(lock.Holder)) (lock.Lease, error) {
	if req.Limit > 1 {
		return b.acquireSemaphore(ctx, req, progress)
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	for {
		e, first, granted, err := b.enqueue(ctx, req)
		if err != nil {
			return nil, err
		}
		if first.CreateRevision == e.rev {
			return b.newLease(e, granted), nil
		}
		l, err := b.wait(ctx, e, first, progress)
		if errors.Is(err, errLostPlace) && ctx.Err() == nil {
			continue
		}
		return l, err
	}
}

// waiter is the state of one wait in the queue.
type waiter struct {
	b        *Backend
	e        *entry
	ttl      time.Duration
	progress func(lock.Holder)
	shown    *mvccpb.KeyValue // the holder last reported to progress
	last     lock.Holder      // the holder last seen, for the busy error
}

// report tells progress about the holder kv if it changed (another
// contender, or the same one restamped by a compare-and-put).
func (w *waiter) report(ctx context.Context, kv *mvccpb.KeyValue) {
	if w.shown != nil && w.shown.CreateRevision == kv.CreateRevision && w.shown.ModRevision == kv.ModRevision {
		return
	}
	w.shown = kv
	w.last = w.b.holderOf(ctx, w.e.key, kv)
	if w.progress != nil {
		w.progress(w.last)
	}
}

func (b *Backend) wait(ctx context.Context, e *entry, first *mvccpb.KeyValue, progress func(lock.Holder)) (lock.Lease, error) {
	w := &waiter{b: b, e: e, ttl: time.Duration(e.rec.TTLms) * time.Millisecond, progress: progress}
	w.report(ctx, first)

	// Keep our own lease alive while queued.
	kactx, stopKA := context.WithCancel(ctx)
	lost := make(chan struct{})
	var kaWG sync.WaitGroup
	kaWG.Add(1)
	go func() {
		defer kaWG.Done()
		w.keepAlive(kactx, lost)
	}()
	stopKeepAlive := func() { stopKA(); kaWG.Wait() }

	err := w.waitFirst(ctx, lost)
	stopKeepAlive()
	if err == nil {
		select {
		case <-lost:
			err = errLostPlace
		default:
			var l *Lease
			if l, err = w.takeOver(ctx); err == nil {
				return l, nil
			}
		}
	}
	b.cleanup(ctx, e)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		if w.last.Key == "" {
			w.last = lock.Holder{Key: e.key, ExpiresIn: -1}
		}
		return nil, &lock.BusyError{Holder: w.last}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("waiting for %s: %w", e.key, ctx.Err())
	}
	return nil, err // errLostPlace (Acquire queues again) or a failure
}

// keepAlive renews our lease every TTL/3 until ctx ends; it closes lost
// when the server says the lease is gone. Other errors are retried.
func (w *waiter) keepAlive(ctx context.Context, lost chan<- struct{}) {
	every := max(w.ttl/3, 50*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		kctx, cancel := context.WithTimeout(ctx, every)
		_, err := w.b.cli.KeepAliveOnce(kctx, w.e.id)
		cancel()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			close(lost)
			return
		}
	}
}

// waitFirst returns nil once no contender is ahead of us. It watches the
// deletion of the contender just ahead (and, to keep progress current, any
// change of the holder's key); it never polls.
func (w *waiter) waitFirst(ctx context.Context, lost <-chan struct{}) error {
	cli := w.b.cli
	backoff := 50 * time.Millisecond
	for {
		resp, err := cli.Txn(ctx).Then(
			clientv3.OpGet(w.e.qp, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(w.e.rev-1))...),
			clientv3.OpGet(w.e.qp, clientv3.WithFirstCreate()...),
		).Commit()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isPermanent(err) {
				return w.b.opError("wait for "+w.e.key, err)
			}
			// Transient (leader change, timeout): retry, gently.
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, time.Second)
				continue
			case <-lost:
				return errLostPlace
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		backoff = 50 * time.Millisecond
		ahead := resp.Responses[0].GetResponseRange().Kvs
		if len(ahead) == 0 {
			return nil
		}
		if firsts := resp.Responses[1].GetResponseRange().Kvs; len(firsts) > 0 {
			w.report(ctx, firsts[0])
		}
		if err := w.watchOnce(ctx, lost, ahead[0], resp.Header.Revision+1); err != nil {
			return err
		}
	}
}

// watchOnce blocks until the contender ahead is deleted, the holder's key
// changes (only when someone listens to progress), or a watch hiccup asks
// for a fresh read. It returns nil to ask the caller to read again.
func (w *waiter) watchOnce(ctx context.Context, lost <-chan struct{}, ahead *mvccpb.KeyValue, fromRev int64) error {
	// WithRequireLeader: a member cut off from the leader cancels the
	// watches instead of leaving them silent; we then read again.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	aheadCh := w.b.cli.Watch(wctx, string(ahead.Key), clientv3.WithRev(fromRev), clientv3.WithFilterPut())
	var holderCh clientv3.WatchChan // nil: blocks forever
	if w.progress != nil && w.shown != nil && string(w.shown.Key) != string(ahead.Key) {
		holderCh = w.b.cli.Watch(wctx, string(w.shown.Key), clientv3.WithRev(fromRev))
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-lost:
			return errLostPlace
		case wr, ok := <-aheadCh:
			if !ok || wr.Canceled || wr.Err() != nil {
				return nil // compacted, cancelled by the server...: read again
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return nil
				}
			}
		case wr, ok := <-holderCh:
			if !ok || wr.Canceled || wr.Err() != nil || len(wr.Events) > 0 {
				return nil
			}
		}
	}
}

// takeOver makes a waiter that reached the head of the queue the holder:
// renew the lease once more (validity counts from just before this), then
// check our key is still ours and stamp the acquisition time on it.
func (w *waiter) takeOver(ctx context.Context) (*Lease, error) {
	e := w.e
	granted := time.Now()
	if _, err := w.b.cli.KeepAliveOnce(ctx, e.id); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return nil, errLostPlace
		}
		return nil, w.b.opError("renew the lease for "+e.key, err)
	}
	rec := e.rec
	rec.AcquiredAt = time.Now()
	resp, err := w.b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.etcdKey), "=", e.rev)).
		Then(clientv3.OpPut(e.etcdKey, rec.encode(), clientv3.WithLease(e.id))).
		Commit()
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return nil, errLostPlace
		}
		return nil, w.b.opError("take "+e.key, err)
	}
	if !resp.Succeeded {
		return nil, errLostPlace // our key was deleted
	}
	e.rec = rec
	return w.b.newLease(e, granted), nil
}

// isPermanent tells errors that retrying cannot fix.
func isPermanent(err error) bool {
	return isAuthError(err) || errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrUserEmpty)
}
