package consul

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// contender is one process's place in KEY's line: its session and, once
// it has joined, its entry. A try-once joins, reads the line in the same
// transaction, and takes over at once when it is within the first limit
// entries (and no one waits ahead of it); else it is busy and Leave
// destroys its session, which deletes its entry. A waiter keeps its
// session alive (keepAlive) and watches only what can make it next
// (watch.go).
type contender struct {
	b     *Backend
	req   lock.Request
	limit int

	sid     string
	granted time.Time // just before the session was created
	joined  bool
	last    *lock.Holder // the last holder seen, for busy answers

	// block is what Wait watches, set by the last busy Try (watch.go);
	// nil when a lock-delay holds our slot back: Wait then polls.
	block func(ctx context.Context)

	// A waiter's keep-alive runs while alive lasts, and ends alive itself
	// when Consul says the session is gone (watch.go).
	alive             context.Context
	stopKA, stopWatch context.CancelFunc
}

// Contend implements lock.Backend: no I/O until the first Try.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &contender{b: b, req: req, limit: max(req.Limit, 1)}
}

// Try implements lock.Contender. A takeover that loses a race (a slot or
// the counter taken in between) reads again, five reads at most: each
// lost race means another contender made progress.
func (c *contender) Try(ctx context.Context) (lock.Lease, error) {
	for range 5 {
		l, again, err := c.step(ctx)
		if !again {
			if l != nil {
				c.stopWaiting()
			}
			return l, err
		}
	}
	return nil, &lock.UnavailableError{Msg: fmt.Sprintf("consul: %s: the line kept moving while taking over; try again", c.req.Key)}
}

// step is one read of the line and what follows from it: the lease, busy,
// an error, or again (read once more).
func (c *contender) step(ctx context.Context) (lock.Lease, bool, error) {
	if c.alive != nil && c.alive.Err() != nil { // our session is gone
		c.reset()
	}
	if c.sid == "" {
		c.granted = time.Now()
		sid, err := c.b.createSession(ctx, c.req.TTL)
		if err != nil {
			return nil, false, err
		}
		c.sid = sid
	}
	v, err := c.read(ctx)
	if err != nil {
		return nil, false, err
	}
	return c.decide(ctx, v)
}

// read reads the line, the counter and the slots in one transaction; the
// first read of a contender joins the line in it first (a "lock" of our
// entry with our session). Any read that contains our entry shows every
// entry ahead of it that still exists: entries are only ever created at
// the back, so even a read served by a lagging server cannot show us
// ahead of a live entry. A session gone makes the join fail: the view is
// then empty, and decide joins again.
func (c *contender) read(ctx context.Context) (view, error) {
	b, key := c.b, c.req.Key
	var ops api.TxnOps
	if !c.joined {
		rec := record{Record: lock.NewRecord(c.req, time.Now()), Limit: c.req.Limit}
		ops = append(ops, kvOp(api.KVLock, b.lineDir(key)+c.sid, rec.encode(), 0, c.sid))
	}
	ok, res, _, err := b.txn(ctx, "read the line of "+key, append(ops, b.viewOps(key)...))
	if err != nil || !ok {
		return view{}, err
	}
	if !c.joined { // the lock's result comes first, then the reads'
		c.joined, res = true, res[1:]
	}
	return b.viewOf(key, res), nil
}

// decide acts on a read: take over when our entry is among the holders'
// places, else busy (remembering what to watch).
func (c *contender) decide(ctx context.Context, v view) (lock.Lease, bool, error) {
	pos := v.position(c.sid)
	if pos < 0 { // our session expired since: join again
		c.reset()
		return nil, true, nil
	}
	var limits []lock.SeenLimit // the first in line sets the limit: behind it, ours must match
	if pos > 0 {
		limits = []lock.SeenLimit{{Have: v.line[0].rec.limit()}}
	}
	hs := holders(v.line)
	var busy *lock.BusyError
	err := lock.Refuse(c.req.Key, c.limit, describe(c.req.Key, hs), limits, pos >= c.limit)
	if err == nil {
		return c.takeOver(ctx, v, v.line[pos])
	}
	if !errors.As(err, &busy) {
		return nil, false, err
	}
	h := busy.Holder
	if h.Token == 0 && c.last != nil {
		h = *c.last // the first in line is taking over: keep the last holder
	}
	c.last = &h
	c.block = c.b.blockOnKey(v.line[pos-1].kv)
	if c.limit > 1 && pos == c.limit {
		c.block = c.b.blockOnHolders(c.b.lineDir(c.req.Key), hs)
	}
	return nil, false, &lock.BusyError{Holder: h}
}

// takeOver makes our entry, which the read v found among the holders'
// places, the holder: one transaction raises the token counter (by the
// one token rule, lock.NextToken, on distlock's wall clock: Consul's
// indexes start again when its data is lost, tokens must not), writes the
// token into our record and claims a free slot (a mutex's is slot 0); it
// applies only if the counter and our entry are as read and the slot is
// free (and not held back by a lock-delay). Validity counts from just
// before the session was created, or, for a waiter (its keep-alive
// running), from just before a renewal sent alongside.
func (c *contender) takeOver(ctx context.Context, v view, me entry) (lock.Lease, bool, error) {
	slot := v.freeSlot(c.b.slotDir(c.req.Key), c.limit)
	if slot < 0 {
		return nil, true, nil // a slot not yet given back: read again
	}
	now := time.Now()
	rec := me.rec
	rec.Token, rec.AcquiredAt, rec.Slot, rec.Limit = lock.NextToken(v.lastToken(), lock.ClockMicros(now)), now, slot, c.req.Limit
	s := &session{b: c.b, kvKey: me.kv.Key, slotKey: c.b.slotKey(c.req.Key, slot), sid: c.sid, rec: rec}
	ops := api.TxnOps{
		c.b.counterOp(v, c.req.Key, rec.Token),
		kvOp(api.KVCheckIndex, me.kv.Key, nil, me.kv.ModifyIndex, ""),
		kvOp(api.KVLock, me.kv.Key, rec.encode(), 0, c.sid),
		kvOp(api.KVCheckNotExists, s.slotKey, nil, 0, ""),
		kvOp(api.KVLock, s.slotKey, []byte(c.sid), 0, c.sid),
	}
	sent := time.Now()
	renewed, waiter := make(chan error, 1), c.alive != nil
	if waiter {
		go func() { renewed <- c.b.renewSession(ctx, c.sid) }()
	}
	ok, _, why, err := c.b.txn(ctx, "take over "+c.req.Key, ops)
	granted := c.granted
	if waiter {
		rerr := <-renewed
		if ok && err == nil {
			granted, err = c.confirm(ctx, sent, rerr)
		}
	}
	switch {
	case errors.Is(err, lock.ErrNotHeld): // taken, then lost: read again (and join again)
		return nil, true, nil
	case err == nil && !ok && strings.Contains(why, "lock delay"):
		return nil, false, c.delayed()
	case err != nil || !ok:
		return nil, err == nil, err
	}
	return s.lease(c.req.Key, granted), false, nil
}

// confirm gives the time a waiter's lease counts from once it took over:
// just before the renewal sent alongside the takeover, or, if that one
// failed, before the first that answers. A session gone since means the
// lease is too.
func (c *contender) confirm(ctx context.Context, sent time.Time, rerr error) (time.Time, error) {
	for rerr != nil {
		if errors.Is(rerr, errSessionGone) {
			return time.Time{}, lock.ErrNotHeld
		}
		if ctx.Err() != nil {
			return time.Time{}, rerr
		}
		time.Sleep(20 * time.Millisecond)
		sent = time.Now()
		rerr = c.b.renewSession(ctx, c.sid)
	}
	return sent, nil
}

// delayed is the busy answer for a slot Consul holds back after its
// holder's session was invalidated (lockDelay): the last holder seen, and
// Wait polls (nothing in the line will change when the delay ends).
func (c *contender) delayed() error {
	h := lock.Holder{Key: c.req.Key, ExpiresIn: -1, Meta: lock.Meta{Host: "(Consul's lock-delay after the last holder's session ended)"}}
	if c.last != nil {
		h = *c.last
	}
	c.last, c.block = &h, nil
	return &lock.BusyError{Holder: h}
}

// Leave implements lock.Contender: destroying the session deletes our
// entry (and anything else it holds).
func (c *contender) Leave() { c.reset() }

// reset forgets our place, destroying its session: the next step joins
// again at the back.
func (c *contender) reset() {
	c.stopWaiting()
	c.b.cleanup(context.Background(), c.sid)
	c.sid, c.joined = "", false
}
