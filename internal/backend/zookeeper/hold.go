package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.LeaseStore: it keeps the lock for d with no
// process. A session cannot outlive its process, so our node is replaced
// by a TTL node (hold-...) in the same place in line, whose record says
// how long it holds, and whose own TTL is that length; then our session
// ends. The new hold node (of the next generation when it replaces one)
// is created before our node is deleted, so the place is never empty; if
// ours was already gone (broken, expired), the new one is deleted again
// and the answer is lock.ErrNotHeld. A semaphore slot is kept the same
// way: the hold node's record names the slot, and the slot node
// (ephemeral) is deleted with the lock node, in one multi; new holders
// pass over slots named by hold nodes (see claimSlot). The handle keeps
// the TTL asked for.
//
// The multi that deletes our node also writes the new node once (version
// 0 to 1), so the new node's version says whether the multi was applied.
// A multi whose reply is lost is settled by that (see settle): the new
// node is only ever deleted at version 0, which no applied multi leaves.
func (l *nodeStore) Hold(ctx context.Context, h *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	if l.released {
		return h.TTL(), h.NotOurs()
	}
	rec := l.rec
	rec.Hold, rec.HoldMs, rec.Token = mode, max(d, time.Millisecond).Milliseconds(), h.Token()
	rec.NodeTTL = rec.HoldMs
	gen := l.gen + 1
	if l.lock != "" {
		gen = 0
	}
	name := holdName(h.Limit(), l.nonce, gen, l.seq)
	s, err := l.conn()
	if err != nil {
		return h.TTL(), err
	}
	path := l.dir + "/" + name
	if err := s.createTTL(ctx, path, rec.encode(), time.Duration(rec.NodeTTL)*time.Millisecond); errors.Is(err, zk.ErrNoNode) {
		return h.TTL(), h.NotOurs() // the key's node is gone, and our node with it
	} else if errors.Is(err, zk.ErrNodeExists) {
		// Another extend of this handle made the node first (Hold never
		// sends its create twice). It is not ours to delete: an older
		// build's holds the lock at version 0.
		return h.TTL(), l.b.opError("hold "+h.Key()+" (another extend of this handle came first)", err)
	} else if err != nil {
		// A create whose reply was lost may still be applied: delete its
		// node (version 0: no multi has made it hold the lock), or it
		// would keep the lock for d after this error.
		rctx, cancel := l.b.fresh(ctx)
		_ = s.remove(rctx, path, 0)
		cancel()
		return h.TTL(), l.b.opError("hold "+h.Key(), err)
	}
	ops := append(l.ours(h, l.holdVer), &zk.SetDataRequest{Path: path, Data: rec.encode(), Version: 0})
	if _, err := s.multi(ctx, ops...); err != nil {
		if err := l.settle(ctx, s, h, name, d, err); err != nil {
			return h.TTL(), err
		}
	}
	if l.s != nil {
		l.s.close(time.Second)
		l.s = nil
	}
	l.lock, l.hold, l.gen, l.holdVer, l.rec = "", name, gen, 1, rec
	return h.TTL(), nil
}

// settle decides a Hold whose multi (deleting our node, writing the new
// hold node, name, at version 0) failed with multiErr, on a fresh short
// context. It deletes the new node at version 0: done, the multi was not
// applied, nor can it be any more; the node at another version (1), it
// was. A multi that failed on our node (gone, or a hold node at another
// version) was not applied either. nil: the multi was applied, the lock is
// held by the new node. lock.ErrNotHeld: our node is gone (broken, or
// expired with our session). Any other error: the multi was not applied
// and the lock keeps its old expiry, or it is not known which of the two
// nodes holds the lock (both are left as they are then).
func (l *nodeStore) settle(ctx context.Context, s *session, h *lock.Held, name string, d time.Duration, multiErr error) error {
	rctx, cancel := l.b.fresh(ctx)
	defer cancel()
	err := s.remove(rctx, l.dir+"/"+name, 0)
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return nil // written by the multi, which deleted our node with it
	case errors.Is(multiErr, zk.ErrNoNode), errors.Is(multiErr, zk.ErrBadVersion):
		return h.NotOurs() // our node is gone (or the key's, with it)
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		return l.b.opError(fmt.Sprintf("hold %s (no answer, and the lock could not be read back: it is held either for %s more or until it was due to expire)", h.Key(), d), multiErr)
	}
	// Not applied: our node is as it was, unless it is gone.
	ok, st, err := s.exists(rctx, l.dir+"/"+l.own())
	if err == nil && (!ok || (l.lock == "" && st.Version != l.holdVer)) {
		return h.NotOurs()
	}
	return l.b.opError(fmt.Sprintf("hold %s (not applied: the lock is still held until it was due to expire)", h.Key()), multiErr)
}

// own is the name of our node: the lock node, or the hold node once held.
func (l *nodeStore) own() string {
	if l.lock != "" {
		return l.lock
	}
	return l.hold
}

// fresh is a short context of its own (the connect timeout, at most
// cleanupTimeout), for a request that must go out even when ctx has ended.
func (b *Backend) fresh(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), min(b.connectTO, cleanupTimeout))
}
