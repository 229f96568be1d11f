package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Contend implements lock.Backend. Contenders of a key queue in arrival
// order (sequential nodes); a mutex waiter watches only the contender just
// ahead of it, a semaphore waiter the key's list of contenders.
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

	ahead    string        // the node just ahead of us (mutex), at the last Try
	seen     int32         // the line's version (the key node's cversion) at the last Try
	holdLeft time.Duration // the head's hold: time until it may expire (<0: none)

	shown  string // the holder's node as last described
	shownV int32
	holder lock.Holder
}

// Try implements lock.Contender.
func (c *contender) Try(ctx context.Context) (lock.Lease, error) {
	if err := lock.ValidateRequest(c.req); err != nil {
		return nil, err
	}
	if c.s == nil {
		// The session is the lease, so it is asked for with the TTL; a
		// lease held at once (distlock acquire) only lives as a session
		// until Hold makes it a TTL node, so any session will do.
		timeout := c.req.TTL
		if c.req.HeldAtOnce {
			timeout = min(timeout, adminSession)
		}
		c.b.parkAdmin() // a run needs one connection, not two (admin.go)
		s, err := c.b.dial(ctx, timeout)
		if err != nil {
			return nil, err
		}
		if got := time.Duration(s.negotiated.Load()) * time.Millisecond; got < timeout {
			s.close(time.Second)
			return nil, lock.Invalidf("zookeeper at %s grants sessions of at most %s, shorter than --ttl %s: a lock there lasts only as long as its session; use --ttl %s or less, or raise the servers' maxSessionTimeout (20 ticks by default)",
				c.b.desc, got, c.req.TTL, got)
		}
		c.s = s
	}
	for attempt := 0; ; attempt++ {
		if c.node == "" && c.attempted {
			// A create whose answer was lost may have made our node: look
			// for it (by our nonce) before making another.
			names, err := c.b.children(ctx, c.s, c.dir)
			if err != nil {
				return nil, c.b.opError("read the line of "+c.req.Key, err)
			}
			for _, e := range parseLine(names) {
				if e.nonce == c.nonce && e.lock != "" {
					c.node = e.lock
					c.s.sid = c.s.conn.SessionID()
				}
			}
			c.attempted = false
		}
		if c.node == "" {
			if err := c.join(ctx); err != nil {
				return nil, err
			}
		}
		// The key's token counter is read alongside the line (one round
		// trip for both): if we hold, the grant needs it (token.go).
		counter := c.b.prefetchCounter(ctx, c.s, c.req.Key)
		names, cv, err := c.b.childrenV(ctx, c.s, c.dir)
		if err != nil {
			return nil, c.b.opError("read the line of "+c.req.Key, err)
		}
		c.seen = cv
		line := parseLine(names)
		mine := -1
		for i, e := range line {
			if e.nonce == c.nonce {
				mine = i
			}
		}
		if mine < 0 || line[mine].lock != c.node {
			// Our node is gone (our session expired, or a break): join
			// again, at the back.
			c.node, c.attempted = "", false
			if attempt < 2 {
				continue
			}
			return nil, &lock.BusyError{Holder: c.lastHolder()}
		}
		for _, e := range line[:mine] {
			if e.limit != c.limit {
				return nil, &lock.LimitMismatchError{Key: c.req.Key, Want: c.limit, Have: e.limit}
			}
		}
		c.holdLeft = -1
		var holds []entry
		for i, e := range line[:min(len(line), c.limit)] {
			if i != mine && e.lock == "" {
				holds = append(holds, e)
			}
		}
		if len(holds) > 0 {
			// Holds are among the holders (the first limit places): are
			// they still live, by the server's clock?
			expired, left, err := c.holdsExpired(ctx, holds)
			if err != nil {
				return nil, err
			}
			if expired && attempt < 3 {
				continue
			}
			c.holdLeft = left
		}
		if mine < c.limit {
			return c.takeOver(ctx, line, counter)
		}
		c.ahead = line[mine-1].node()
		return nil, c.busy(ctx, line[0])
	}
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
			c.ahead = ""
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
	l := &Lease{
		b: c.b, s: c.s, key: c.req.Key, dir: c.dir, node: c.node, nonce: c.nonce,
		token: token, granted: granted, rec: rec, limit: c.limit, slot: slot,
		alerts: make(chan struct{}, 1),
	}
	l.watchOwn()
	c.s = nil // the lease owns the session now
	return l, nil
}

// claimSlot claims a free slot-<i> node for us (-1: none is free). A
// session holder's slot is its ephemeral slot-<i> node; a held slot (a hold
// node, with no session) has none, only the Slot in its record. So slots
// named by hold nodes are passed over, and a slot node we made is checked
// against the hold nodes once more after it was made: a holder that made
// its hold (which it does before deleting its slot node) after our read
// of the line is seen then, and we give that slot back.
func (c *contender) claimSlot(ctx context.Context, line []entry) (int, error) {
	used, err := c.heldSlots(ctx, line)
	if err != nil {
		return -1, err
	}
	for i := range c.limit {
		if used[i] {
			continue
		}
		path := c.dir + "/" + slotName(i)
		err := do(ctx, func() error {
			_, err := c.s.conn.Create(path, []byte(c.nonce), zk.FlagEphemeral, acl)
			return err
		})
		if errors.Is(err, zk.ErrNodeExists) {
			// Ours, from a try whose answer was lost?
			d, ok, rerr := c.b.read(ctx, c.s, path)
			if rerr != nil || !ok || string(d.raw) != c.nonce {
				continue
			}
			err = nil
		}
		if err != nil {
			return -1, c.b.opError("take a slot of "+c.req.Key, err)
		}
		names, err := c.b.children(ctx, c.s, c.dir)
		if err == nil {
			used, err = c.heldSlots(ctx, parseLine(names))
		}
		if err != nil {
			_ = do(context.WithoutCancel(ctx), func() error { return c.s.conn.Delete(path, -1) })
			return -1, c.b.opError("read the line of "+c.req.Key, err)
		}
		if used[i] {
			if err := do(ctx, func() error { return c.s.conn.Delete(path, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return -1, c.b.opError("give back a slot of "+c.req.Key, err)
			}
			continue
		}
		return i, nil
	}
	return -1, nil
}

// heldSlots reads the slots of the hold nodes in line (other than ours).
func (c *contender) heldSlots(ctx context.Context, line []entry) (map[int]bool, error) {
	used := map[int]bool{}
	for _, e := range line {
		if e.hold == "" || e.nonce == c.nonce {
			continue
		}
		d, ok, err := c.b.read(ctx, c.s, c.dir+"/"+e.hold)
		if err != nil {
			return nil, c.b.opError("read the hold on "+c.req.Key, err)
		}
		if ok {
			used[d.rec.Slot] = true
		}
	}
	return used, nil
}

// Wait implements lock.Contender: a mutex waiter watches the node just
// ahead of it (its deletion, or any change, wakes it); a semaphore waiter
// watches the key's children. A hold at the head bounds the wait by its
// expiry.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
	if c.s == nil || c.node == "" || c.ahead == "" {
		return lock.Retry{After: 0}, nil
	}
	bound := lock.NoBound
	if c.holdLeft >= 0 {
		bound = c.holdLeft + 5*time.Millisecond
	}
	var ev <-chan zk.Event
	if c.limit > 1 {
		type r struct {
			cv int32
			ch <-chan zk.Event
		}
		got, err := call(ctx, func() (r, error) {
			_, st, ch, err := c.s.conn.ChildrenW(c.dir)
			if err != nil {
				return r{}, err
			}
			return r{st.Cversion, ch}, nil
		})
		if err != nil || got.cv != c.seen {
			// The line moved since Try read it (a change before the
			// watch was set would never wake us): Try reads again.
			return lock.Retry{After: 0}, nil
		}
		ev = got.ch
	} else {
		type r struct {
			ok bool
			ch <-chan zk.Event
		}
		got, err := call(ctx, func() (r, error) {
			ok, _, ch, err := c.s.conn.ExistsW(c.dir + "/" + c.ahead)
			return r{ok, ch}, err
		})
		if err != nil || !got.ok {
			return lock.Retry{After: 0}, nil
		}
		ev = got.ch
	}
	return lock.Retry{Wake: relay(ev), After: bound}, nil
}

// relay turns a one-shot watch into a wake-up channel.
func relay(ev <-chan zk.Event) <-chan struct{} {
	wake := make(chan struct{}, 1)
	go func() {
		<-ev
		wake <- struct{}{}
	}()
	return wake
}

// Leave implements lock.Contender: delete our node and end our session
// (which would delete it too), on a fresh short context.
func (c *contender) Leave() {
	if c.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.b.connectTO, cleanupTimeout))
	defer cancel()
	if c.node != "" {
		_ = do(ctx, func() error { return c.s.conn.Delete(c.dir+"/"+c.node, -1) })
	}
	c.s.close(time.Second)
	c.s, c.node = nil, ""
}
