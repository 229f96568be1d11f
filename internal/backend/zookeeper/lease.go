package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// nodeStore is the lock.LeaseStore of a held ZooKeeper lock: our lock
// node at the head of the line, alive as long as our session (s); or, once
// held with no process (Hold, Resume), our hold node. The lease's slot is
// -1 for a mutex.
type nodeStore struct {
	b     *Backend
	s     *session // our session; nil for a resumed hold (the backend's is used)
	dir   string
	entry // our place: its lock node ("" once replaced by a hold) or hold node
	rec   record

	holdVer  int32 // our hold node's version
	released bool

	alerts chan struct{}
}

var _ lock.Alerter = (*nodeStore)(nil)

// lease makes the lease of key whose store is l, granted at granted, as
// its record says (token, limit, slot).
func (l *nodeStore) lease(key string, granted time.Time) lock.Lease {
	g := lock.Grant{Key: key, Owner: l.rec.Owner, Token: l.rec.Token, TTL: time.Duration(l.rec.TTLms) * time.Millisecond,
		Granted: granted, Slot: -1, Limit: max(l.rec.Limit, 1)}
	if g.Limit > 1 {
		g.Slot = l.rec.Slot
	}
	return lock.NewLease(g, l)
}

// Alerts implements lock.Alerter: a value when our node is deleted (a
// break) or our session's watches end (the session expired).
func (l *nodeStore) Alerts() <-chan struct{} { return l.alerts }

// watchOwn watches our own node; any event on it is news for the keeper.
// A watch is one-shot: each event sets the next one.
func (l *nodeStore) watchOwn() {
	s, path := l.s, l.dir+"/"+l.lock
	go func() {
		for {
			ok, _, ev, err := s.conn.ExistsW(path)
			if err != nil || !ok {
				// Gone, or no watch to be had: the keeper renews at once
				// and finds out; its renewals cover the rest of the lease.
				notify(l.alerts)
				return
			}
			e := <-ev
			notify(l.alerts)
			if e.Type == zk.EventNodeDeleted || e.Type == zk.EventNotWatching {
				return
			}
		}
	}()
}

// conn is the session requests go on.
func (l *nodeStore) conn() (*session, error) {
	if l.s != nil {
		return l.s, nil
	}
	// A resumed hold has none of its own: the backend's, which Resume
	// keeps in use, so it is never parked.
	l.b.adm.mu.Lock()
	defer l.b.adm.mu.Unlock()
	if l.b.adm.s != nil {
		return l.b.adm.s, nil
	}
	// A lease made by a contender, held once, whose backend has parked its
	// own session since: no command holds or releases such a lease twice,
	// but an error beats a nil session.
	return nil, &lock.UnavailableError{Msg: "zookeeper: this lease's session is closed; resume its handle to release or hold it"}
}

// Renew checks, in one round trip through the leader (a multi holding a
// version check of our node), that our node still exists: the server then
// heard from our session after the moment the request was sent, so the
// session lasts its timeout from then. A missing node (released, broken,
// or deleted with our expired session) is lock.ErrNotHeld, as is a session
// the client had to replace; anything else is transient. It returns when
// ctx ends.
func (l *nodeStore) Renew(ctx context.Context, h *lock.Held) error {
	switch {
	case l.released:
		return fmt.Errorf("%s: released: %w", h.Key(), lock.ErrNotHeld)
	case l.lock == "":
		return fmt.Errorf("%s: the lock is held with no process: %w", h.Key(), lock.ErrNotHeld)
	}
	var err error
	if !l.s.lostSession() {
		_, err = l.s.multi(ctx, &zk.CheckVersionRequest{Path: l.dir + "/" + l.lock, Version: -1})
	}
	switch {
	case l.s.lostSession(): // before the check, or while it was under way
		return fmt.Errorf("%s: our ZooKeeper session expired: %w", h.Key(), lock.ErrNotHeld)
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%s: our lock node is gone (broken, or our session expired): %w", h.Key(), lock.ErrNotHeld)
	case err != nil:
		return fmt.Errorf("zookeeper renew %s: %w", h.Key(), err)
	}
	return nil
}

// ours is the deletes of our node in one multi: the lock node with our
// slot node, or the hold node at version holdVer (-1: any). The slot node
// needs no version (slot.go): the multi deletes only while our lock node
// is there, and while it is, our slot node is the one we made, as it
// goes only with our session, in a multi with our lock node (release,
// hold, break), or by a remover that checked it was still ours (slotRead).
func (l *nodeStore) ours(h *lock.Held, holdVer int32) []any {
	if l.lock == "" {
		return []any{&zk.DeleteRequest{Path: l.dir + "/" + l.hold, Version: holdVer}}
	}
	ops := []any{&zk.DeleteRequest{Path: l.dir + "/" + l.lock, Version: -1}}
	if h.Slot() >= 0 {
		ops = append(ops, &zk.DeleteRequest{Path: l.dir + "/" + slotName(h.Slot()), Version: -1})
	}
	return ops
}

// Release deletes our node if it is still there (ours), removes the key's
// node if that leaves it empty, and ends our session. lock.ErrNotHeld
// when our node was already gone.
func (l *nodeStore) Release(ctx context.Context, h *lock.Held) error {
	if l.released {
		return h.NotOurs()
	}
	s, err := l.conn()
	if err != nil {
		return err
	}
	_, err = s.multi(ctx, l.ours(h, -1)...)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return l.b.opError("release "+h.Key(), err)
	}
	l.released = true
	l.b.tidy(ctx, s, l.dir)
	if l.s != nil {
		l.s.close(time.Second)
	}
	if err != nil {
		return h.NotOurs()
	}
	return nil
}

// Resume finds the hold node of h among the holders (by its owner and
// token) and returns it as a lease, if it is still live by this machine's
// clock (its record's length from its mtime); lock.ErrNotHeld otherwise.
// A running holder's lock (a session) cannot be taken up by another
// process.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	// The lease resumed has no session of its own: it keeps using the
	// backend's, which is never parked then (done is not called).
	s, _, err := b.useAdmin(ctx, h.Key)
	if err != nil {
		return nil, err
	}
	hs, err := b.holders(ctx, s, h.Key)
	if err != nil {
		return nil, err
	}
	for _, e := range hs {
		if e.lock == "" && e.rec.Owner == h.Owner && e.rec.Token == h.Token {
			st := &nodeStore{b: b, dir: b.keyDir(h.Key), entry: e.entry, rec: e.rec, holdVer: e.stat.Version}
			return st.lease(h.Key, time.Now()), nil
		}
	}
	return nil, fmt.Errorf("%s (token %d): %w", h.Key, h.Token, lock.ErrNotHeld)
}
