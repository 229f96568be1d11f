package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Contend implements lock.Backend. Contenders of a key queue in arrival
// order (sequential nodes); the first limit hold, a mutex being the case
// of one place. A waiter watches only what can make it the next to hold
// (wait.go).
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &contender{b: b, req: req, limit: limitOf(req), nonce: newNonce(), dir: b.keyDir(req.Key)}
}

// contender is one process's place in a key's line, on a session of its
// own whose timeout is the TTL: that session becomes the lease.
type contender struct {
	b     *Backend
	req   lock.Request
	limit int
	nonce string
	dir   string

	s         *session
	node      string // our lock node's name; "" before it is made, or once lost
	attempted bool   // a create was sent whose outcome we do not know
	rec       record

	watch    []string      // the nodes ahead whose change may make us next (wait.go), at the last Try
	seen     int32         // the line's version (the key node's cversion) at the last Try
	holdLeft time.Duration // the holders' holds: least time until one may expire (<0: none)

	shown  string // the holder's node as last described
	shownV int32
	holder lock.Holder
}

// Try implements lock.Contender: take our place in line (once), read the
// line, and hold if we are among its first limit places; else describe
// the holder and note what Wait is to watch.
func (c *contender) Try(ctx context.Context) (lock.Lease, error) {
	if err := lock.ValidateRequest(c.req); err != nil {
		return nil, err
	}
	if err := c.openSession(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if err := c.takePlace(ctx); err != nil {
			return nil, err
		}
		// The key's token counter is read alongside the line (one round
		// trip for both): if we hold, the grant needs it (token.go).
		counter := c.b.prefetchCounter(ctx, c.s, c.req.Key)
		line, mine, err := c.readLine(ctx)
		if err != nil {
			return nil, err
		}
		if mine < 0 {
			// Our node is gone (our session expired, or a break): join
			// again, at the back.
			c.node, c.attempted = "", false
			if attempt < 2 {
				continue
			}
			return nil, &lock.BusyError{Holder: c.lastHolder()}
		}
		if err := c.sameLimit(line[:mine]); err != nil {
			return nil, err
		}
		expired, err := c.expireHolds(ctx, line, mine)
		if err != nil {
			return nil, err
		}
		if expired && attempt < 3 {
			continue
		}
		if mine < c.limit {
			return c.takeOver(ctx, line, counter)
		}
		c.watch = watchList(line, mine, c.limit)
		return nil, c.busy(ctx, line[0])
	}
}

// openSession dials our session on the first Try. The session is the
// lease, so it is asked for with the TTL, and a shorter one granted is
// refused; a lease held at once (distlock acquire) only lives as a session
// until Hold makes it a TTL node, so any session will do.
func (c *contender) openSession(ctx context.Context) error {
	if c.s != nil {
		return nil
	}
	timeout := c.req.TTL
	if c.req.HeldAtOnce {
		timeout = min(timeout, adminSession)
	}
	c.b.parkAdmin() // a run needs one connection, not two (admin.go)
	s, err := c.b.dial(ctx, timeout)
	if err != nil {
		return err
	}
	if got := time.Duration(s.negotiated.Load()) * time.Millisecond; got < timeout {
		s.close(time.Second)
		return lock.Invalidf("zookeeper at %s grants sessions of at most %s, shorter than --ttl %s: a lock there lasts only as long as its session; use --ttl %s or less, or raise the servers' maxSessionTimeout (20 ticks by default)",
			c.b.desc, got, c.req.TTL, got)
	}
	c.s = s
	return nil
}

// takePlace makes sure we have a node in line: a create whose answer was
// lost may have made it, so that is looked for (by our nonce) before
// another is made at the back.
func (c *contender) takePlace(ctx context.Context) error {
	if c.node == "" && c.attempted {
		names, err := c.b.children(ctx, c.s, c.dir)
		if err != nil {
			return c.b.opError("read the line of "+c.req.Key, err)
		}
		for _, e := range parseLine(names) {
			if e.nonce == c.nonce && e.lock != "" {
				c.node = e.lock
				c.s.sid = c.s.conn.SessionID()
			}
		}
		c.attempted = false
	}
	if c.node != "" {
		return nil
	}
	return c.join(ctx)
}

// readLine reads the line and finds our place in it (-1: our node is not
// in it, or not as we made it).
func (c *contender) readLine(ctx context.Context) (line []entry, mine int, err error) {
	names, cv, err := c.b.childrenV(ctx, c.s, c.dir)
	if err != nil {
		return nil, -1, c.b.opError("read the line of "+c.req.Key, err)
	}
	c.seen = cv
	line = parseLine(names)
	for i, e := range line {
		if e.nonce == c.nonce && e.lock == c.node {
			return line, i, nil
		}
	}
	return line, -1, nil
}

// sameLimit: everyone ahead of us asked for our limit (exit 64 otherwise).
func (c *contender) sameLimit(ahead []entry) error {
	for _, e := range ahead {
		if e.limit != c.limit {
			return &lock.LimitMismatchError{Key: c.req.Key, Want: c.limit, Have: e.limit}
		}
	}
	return nil
}

// join creates our lock node at the back of the line, creating the key's
// node first if it is missing (or was just removed, being empty).
func (c *contender) join(ctx context.Context) error {
	now := time.Now()
	c.rec = newRecord(c.req, now)
	c.rec.SessionMs = int64(c.s.negotiated.Load())
	for attempt := 0; ; attempt++ {
		c.attempted = true
		path, err := call(ctx, func() (string, error) {
			return c.s.conn.Create(c.dir+"/"+lockPrefix(c.limit, c.nonce), c.rec.encode(), zk.FlagEphemeralSequential, acl)
		})
		switch {
		case err == nil:
			c.node, c.attempted = path[len(c.dir)+1:], false
			// The node lives as long as the session it was made on: if
			// the client replaced an expired session, this is the new
			// one (a later replacement is then the loss of the lease).
			c.s.sid = c.s.conn.SessionID()
			return nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 3:
			c.attempted = false
			if err := c.b.ensureDir(ctx, c.s, c.dir); err != nil {
				return c.b.opError("create "+c.dir, err)
			}
		default:
			return c.b.opError("join the line of "+c.req.Key, err)
		}
	}
}

// busy describes the holder (reading its node only when it changed).
func (c *contender) busy(ctx context.Context, head entry) error {
	name := head.node()
	d, ok, err := c.b.read(ctx, c.s, c.dir+"/"+name)
	if err != nil {
		return c.b.opError("read the holder of "+c.req.Key, err)
	}
	if ok && (name != c.shown || d.stat.Version != c.shownV) {
		// A first in line with no token yet is a waiter taking over from
		// the holder that just left: until it has the lock, the last
		// holder shown stays.
		if h := holderOf(c.req.Key, head, d, time.Now()); h.Token != 0 || c.shown == "" {
			c.shown, c.shownV, c.holder = name, d.stat.Version, h
		}
	}
	return &lock.BusyError{Holder: c.lastHolder()}
}

func (c *contender) lastHolder() lock.Holder {
	if c.shown == "" {
		return lock.Holder{Key: c.req.Key, ExpiresIn: -1}
	}
	return c.holder
}

// takeOver makes us the holder: for a semaphore, claim a free slot; then
// stamp the acquisition time and the token on our node with a write (in
// one multi with the key's token counter, token.go), which also proves,
// through the leader, that our node (so our session) was alive after the
// moment it was sent: the lease's validity counts from that moment.
func (c *contender) takeOver(ctx context.Context, line []entry, counter <-chan counterRead) (lock.Lease, error) {
	slot := -1
	if c.limit > 1 {
		var err error
		if slot, err = c.claimSlot(ctx, line); err != nil {
			return nil, err
		}
		if slot < 0 {
			// A holder ahead is leaving: try again at once.
			c.watch = nil
			return nil, &lock.BusyError{Holder: c.lastHolder()}
		}
		c.rec.Slot = slot
	}
	rec := c.rec
	rec.AcquiredAt = time.Now()
	token, rec, granted, lost, err := c.b.grantToken(ctx, c.s, c.req.Key, c.dir+"/"+c.node, rec, counter)
	if lost {
		// We lost our place (our session expired): give the slot back.
		if slot >= 0 {
			_ = do(ctx, func() error { return c.s.conn.Delete(c.dir+"/"+slotName(slot), -1) })
		}
		c.node = ""
		return nil, &lock.BusyError{Holder: c.lastHolder()}
	}
	if err != nil {
		return nil, c.b.opError("take "+c.req.Key, err)
	}
	c.rec = rec
	st := &nodeStore{b: c.b, s: c.s, dir: c.dir, node: c.node, nonce: c.nonce, rec: rec, alerts: make(chan struct{}, 1)}
	st.watchOwn()
	c.s = nil // the lease owns the session now
	return st.lease(c.req.Key, token, granted, slot, c.limit), nil
}
