package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// seqOf is the sequence number at the end of a node's name.
func seqOf(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Hold implements lock.LeaseStore: it keeps the lock for d with no
// process. A session cannot outlive its process, so our lock node is
// replaced by a TTL node (hold-...) in the same place in line, whose record says how long it holds; then our
// session ends. The hold node is created before the lock node is deleted,
// so the place is never empty; if the lock node was already gone (broken,
// expired), the hold node is deleted again and the answer is
// lock.ErrNotHeld. A semaphore slot is kept the same way: the hold node's
// record names the slot, and the slot node (ephemeral, so it could not
// outlive the session) is deleted with the lock node, in one multi; new
// holders pass over slots named by hold nodes (see claimSlot). Holding
// again (distlock extend) rewrites the hold node, or, for a longer hold
// than the node's own TTL, replaces it by a node of the next generation,
// created first.
func (l *nodeStore) Hold(ctx context.Context, h *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	return h.TTL(), l.holdOn(ctx, h, d, mode) // the handle keeps the TTL asked for
}

// holdOn is Hold's work.
func (l *nodeStore) holdOn(ctx context.Context, h *lock.Held, d time.Duration, mode string) error {
	if l.released {
		return h.NotOurs()
	}
	d = max(d, time.Millisecond)
	rec := l.rec
	rec.Hold, rec.HoldMs, rec.Token = mode, d.Milliseconds(), h.Token()
	s := l.conn()
	if l.node != "" {
		rec.NodeTTL = rec.HoldMs
		seq := seqOf(l.node)
		name := holdName(h.Limit(), l.nonce, 0, seq)
		if err := l.createHold(ctx, h, s, name, rec); err != nil {
			return err
		}
		ops := []any{&zk.DeleteRequest{Path: l.dir + "/" + l.node, Version: -1}}
		if h.Slot() >= 0 {
			ops = append(ops, &zk.DeleteRequest{Path: l.dir + "/" + slotName(h.Slot()), Version: -1})
		}
		err := multi(ctx, s, ops...)
		if err != nil {
			_ = do(context.WithoutCancel(ctx), func() error { return s.conn.Delete(l.dir+"/"+name, -1) })
			if errors.Is(err, zk.ErrNoNode) {
				return h.NotOurs()
			}
			return l.b.opError("hold "+h.Key(), err)
		}
		l.node, l.hold, l.holdGen, l.holdSeq, l.holdVer, l.rec = "", name, 0, seq, 0, rec
		if l.s != nil {
			l.s.close(time.Second)
			l.s = nil
		}
		return nil
	}
	if rec.HoldMs <= l.rec.NodeTTL {
		st, err := call(ctx, func() (*zk.Stat, error) { return s.conn.Set(l.dir+"/"+l.hold, rec.encode(), l.holdVer) })
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			return h.NotOurs()
		}
		if err != nil {
			return l.b.opError("hold "+h.Key(), err)
		}
		l.holdVer, l.rec = st.Version, rec
		return nil
	}
	rec.NodeTTL = rec.HoldMs
	name := holdName(h.Limit(), l.nonce, l.holdGen+1, l.holdSeq)
	if err := l.createHold(ctx, h, s, name, rec); err != nil {
		return err
	}
	err := do(ctx, func() error { return s.conn.Delete(l.dir+"/"+l.hold, l.holdVer) })
	if err != nil {
		_ = do(context.WithoutCancel(ctx), func() error { return s.conn.Delete(l.dir+"/"+name, -1) })
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			return h.NotOurs()
		}
		return l.b.opError("hold "+h.Key(), err)
	}
	l.hold, l.holdGen, l.holdVer, l.rec = name, l.holdGen+1, 0, rec
	return nil
}

func (l *nodeStore) createHold(ctx context.Context, h *lock.Held, s *session, name string, rec record) error {
	err := do(ctx, func() error {
		_, err := s.conn.CreateTTL(l.dir+"/"+name, rec.encode(), zk.FlagTTL, acl, time.Duration(rec.NodeTTL)*time.Millisecond)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return h.NotOurs() // the key's node is gone: so is our lock node
	}
	if err != nil {
		return l.b.opError("hold "+h.Key(), err)
	}
	return nil
}

// Resume finds the hold node of h (by its owner and token) and returns it
// as a lease, if it is still live by this machine's clock (its record's
// length from its mtime); lock.ErrNotHeld otherwise. A running holder's
// lock (a session) cannot be taken up by another process.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	if err := lock.ValidateKey(h.Key); err != nil {
		return nil, err
	}
	dir := b.keyDir(h.Key)
	// The lease resumed has no session of its own: it keeps using the
	// backend's, which is never parked then (done is not called).
	s, _, err := b.useAdmin(ctx)
	if err != nil {
		return nil, err
	}
	names, err := b.children(ctx, s, dir)
	if err != nil {
		return nil, b.opError("resume "+h.Key, err)
	}
	for _, e := range parseLine(names) {
		if e.hold == "" {
			continue
		}
		d, ok, err := b.read(ctx, s, dir+"/"+e.hold)
		if err != nil {
			return nil, b.opError("resume "+h.Key, err)
		}
		if !ok || d.rec.Owner != h.Owner || d.rec.Token != h.Token {
			continue
		}
		if !time.Now().Before(time.UnixMilli(holdExpiry(d))) {
			break // expired: a waiter may delete it at any moment
		}
		slot := -1
		if e.limit > 1 {
			slot = d.rec.Slot
		}
		st := &nodeStore{
			b: b, dir: dir, nonce: e.nonce, rec: d.rec, hold: e.hold, holdGen: e.gen, holdSeq: e.seq, holdVer: d.stat.Version,
		}
		return st.lease(h.Key, h.Token, time.Now(), slot, e.limit), nil
	}
	return nil, fmt.Errorf("%s (token %d): %w", h.Key, h.Token, lock.ErrNotHeld)
}

// expireHolds looks at the holds among the holders (the first limit
// places, ours aside): are they still live, by the server's clock? An
// expired one is deleted (expired says so: read the line again); the
// least time left of the live ones bounds our wait (holdLeft). A later
// waiter leaves them to the first: it moves up only once the one ahead of
// it did, which wakes it (wait.go).
func (c *contender) expireHolds(ctx context.Context, line []entry, mine int) (expired bool, err error) {
	c.holdLeft = -1
	if mine > c.limit {
		return false, nil
	}
	var holds []entry
	for i, e := range line[:min(len(line), c.limit)] {
		if i != mine && e.lock == "" {
			holds = append(holds, e)
		}
	}
	if len(holds) == 0 {
		return false, nil
	}
	expired, c.holdLeft, err = c.holdsExpired(ctx, holds)
	return expired, err
}

// holdsExpired reads the holds among the holders and the server's clock
// (the mtime of a write of our own node); an expired hold is deleted
// (compare-and-delete on its version). expired says one was; left is the
// least time left of the live ones (-1 when none is live).
func (c *contender) holdsExpired(ctx context.Context, holds []entry) (expired bool, left time.Duration, err error) {
	ds := make([]described, 0, len(holds))
	for _, h := range holds {
		d, ok, err := c.b.read(ctx, c.s, c.dir+"/"+h.hold)
		if err != nil {
			return false, 0, c.b.opError("read the hold on "+c.req.Key, err)
		}
		if !ok {
			return true, 0, nil
		}
		ds = append(ds, d)
	}
	st, err := call(ctx, func() (*zk.Stat, error) {
		return c.s.conn.Set(c.dir+"/"+c.node, c.rec.encode(), -1)
	})
	if errors.Is(err, zk.ErrNoNode) {
		return true, 0, nil // we lost our place: Try finds out
	}
	if err != nil {
		return false, 0, c.b.opError("read the server's clock", err)
	}
	left = -1
	for i, d := range ds {
		l := time.Duration(holdExpiry(d)-st.Mtime) * time.Millisecond
		if l > 0 {
			if left < 0 || l < left {
				left = l
			}
			continue
		}
		err = do(ctx, func() error { return c.s.conn.Delete(c.dir+"/"+holds[i].hold, d.stat.Version) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			return false, 0, c.b.opError("delete the expired hold on "+c.req.Key, err)
		}
		expired = true
	}
	return expired, left, nil
}
