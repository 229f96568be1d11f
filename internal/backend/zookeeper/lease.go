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
	node  string // our lock node ("" once replaced by a hold)
	nonce string
	rec   record

	hold     string // our hold node, once held with no process
	holdGen  int
	holdSeq  int64
	holdVer  int32
	released bool

	alerts chan struct{}
}

var _ lock.Alerter = (*nodeStore)(nil)

// lease makes the lease of key whose store is l, granted with token at
// granted, in slot (-1 for a mutex) of limit.
func (l *nodeStore) lease(key string, token uint64, granted time.Time, slot, limit int) lock.Lease {
	g := lock.Grant{Key: key, Owner: l.rec.Owner, Token: token, TTL: time.Duration(l.rec.TTLms) * time.Millisecond,
		Granted: granted, Slot: slot, Limit: limit}
	return lock.NewLease(g, l)
}

// Alerts implements lock.Alerter: a value when our node is deleted (a
// break) or our session's watches end (the session expired).
func (l *nodeStore) Alerts() <-chan struct{} { return l.alerts }

// watchOwn watches our own node; any event on it is news for the keeper.
// A watch is one-shot: each event sets the next one.
func (l *nodeStore) watchOwn() {
	s, path := l.s, l.dir+"/"+l.node
	go func() {
		for {
			ok, _, ev, err := s.conn.ExistsW(path)
			if err != nil || !ok {
				// Gone, or no watch to be had: the keeper renews at once
				// and finds out; its renewals cover the rest of the lease.
				l.alert()
				return
			}
			e := <-ev
			l.alert()
			if e.Type == zk.EventNodeDeleted || e.Type == zk.EventNotWatching {
				return
			}
		}
	}()
}

func (l *nodeStore) alert() {
	select {
	case l.alerts <- struct{}{}:
	default:
	}
}

// conn is the session requests go on.
func (l *nodeStore) conn() *session {
	if l.s != nil {
		return l.s
	}
	return l.b.pinnedAdmin()
}

// Renew checks, in one round trip through the leader (a multi holding a
// version check of our node), that our node still exists: the server then
// heard from our session after the moment the request was sent, so the
// session lasts its timeout from then. A missing node (released, broken,
// or deleted with our expired session) is lock.ErrNotHeld, as is a session
// the client had to replace; anything else is transient. It returns when
// ctx ends.
func (l *nodeStore) Renew(ctx context.Context, h *lock.Held) error {
	if l.released {
		return fmt.Errorf("%s: released: %w", h.Key(), lock.ErrNotHeld)
	}
	if l.node == "" {
		return fmt.Errorf("%s: the lock is held with no process: %w", h.Key(), lock.ErrNotHeld)
	}
	if l.s.lostSession() {
		return fmt.Errorf("%s: our ZooKeeper session expired: %w", h.Key(), lock.ErrNotHeld)
	}
	path := l.dir + "/" + l.node
	res, err := call(ctx, func() ([]zk.MultiResponse, error) {
		return l.s.conn.Multi(&zk.CheckVersionRequest{Path: path, Version: -1})
	})
	if err == nil && len(res) == 1 {
		err = res[0].Error
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%s: our lock node is gone (broken, or our session expired): %w", h.Key(), lock.ErrNotHeld)
	case err != nil:
		return fmt.Errorf("zookeeper renew %s: %w", h.Key(), err)
	case l.s.lostSession():
		return fmt.Errorf("%s: our ZooKeeper session expired: %w", h.Key(), lock.ErrNotHeld)
	}
	return nil
}

// Release deletes our node if it is still there (with our slot node, in
// one multi), removes the key's node if that leaves it empty, and ends our
// session. lock.ErrNotHeld when our node was already gone.
func (l *nodeStore) Release(ctx context.Context, h *lock.Held) error {
	if l.released {
		return h.NotOurs()
	}
	s := l.conn()
	var err error
	if l.node != "" {
		ops := []any{&zk.DeleteRequest{Path: l.dir + "/" + l.node, Version: -1}}
		if h.Slot() >= 0 {
			ops = append([]any{&zk.CheckVersionRequest{Path: l.dir + "/" + l.node, Version: -1},
				&zk.DeleteRequest{Path: l.dir + "/" + slotName(h.Slot()), Version: -1}}, ops...)
		}
		err = multi(ctx, s, ops...)
		if errors.Is(err, zk.ErrNoNode) && h.Slot() >= 0 {
			// Our slot node may be gone alone? Never: both go together. Our
			// lock node is gone.
			err = zk.ErrNoNode
		}
	} else {
		err = do(ctx, func() error { return s.conn.Delete(l.dir+"/"+l.hold, -1) })
	}
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		l.released = true
		l.b.tidy(ctx, s, l.dir)
		if l.s != nil {
			l.s.close(time.Second)
		}
	}
	if errors.Is(err, zk.ErrNoNode) {
		return h.NotOurs()
	}
	if err != nil {
		return l.b.opError("release "+h.Key(), err)
	}
	return nil
}

// multi runs ops in one transaction; the first failing op's error is
// returned.
func multi(ctx context.Context, s *session, ops ...any) error {
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) && r.Error.Error() != "unknown error: -2" {
			return r.Error
		}
	}
	for _, r := range res {
		if r.Error != nil {
			return r.Error
		}
	}
	return nil
}
