package consul

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// takeOver makes our entry, which the read v found among the holders'
// places, the holder: one transaction raises the token counter (by the
// one token rule, lock.NextToken, on distlock's wall clock: Consul's
// indexes start again when its data is lost, tokens must not), writes the
// token into our record and claims a free slot (a mutex's is slot 0); it
// applies only if the counter and our entry are as read and the slot is
// free (and not held back by a lock-delay). Validity counts from just before the session was created, or,
// for a waiter, from just before a renewal sent alongside.
func (c *contender) takeOver(ctx context.Context, v view, me entry) (lock.Lease, bool, error) {
	slot := freeSlot(v.slots, c.b.slotDir(c.req.Key), c.limit)
	if slot < 0 {
		return nil, true, nil // a slot not yet given back: read again
	}
	now := time.Now()
	rec := me.rec
	rec.Token, rec.AcquiredAt, rec.Slot, rec.Limit = lock.NextToken(v.lastToken(), lock.ClockMicros(now)), now, slot, c.req.Limit
	ops := api.TxnOps{
		kvOp(api.KVCAS, c.b.tokenKey(c.req.Key), []byte(strconv.FormatUint(rec.Token, 10)), counterIndex(v), ""),
		kvOp(api.KVCheckIndex, me.kv.Key, nil, me.kv.ModifyIndex, ""),
		kvOp(api.KVLock, me.kv.Key, rec.encode(), 0, c.sid),
	}
	s := &session{b: c.b, kvKey: me.kv.Key, slotKey: c.b.slotKey(c.req.Key, slot), sid: c.sid, rec: rec}
	ops = append(ops, kvOp(api.KVCheckNotExists, s.slotKey, nil, 0, ""), kvOp(api.KVLock, s.slotKey, []byte(c.sid), 0, c.sid))
	sent := time.Now()
	renewed := make(chan error, 1)
	if c.waited {
		go func() { renewed <- c.b.renewSession(ctx, c.sid) }()
	}
	ok, _, why, err := c.b.txnWhy(ctx, "take over "+c.req.Key, ops)
	granted := c.granted
	if c.waited {
		rerr := <-renewed
		if ok && err == nil {
			granted, err = c.confirm(ctx, sent, rerr)
		}
	}
	if errors.Is(err, lock.ErrNotHeld) { // taken, then lost: read again (and join again)
		return nil, true, nil
	}
	if err == nil && !ok && strings.Contains(why, "lock delay") {
		return nil, false, c.delayed()
	}
	if err != nil || !ok {
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
	c.last, c.watchKey, c.poll = &h, "", true
	return &lock.BusyError{Holder: h}
}

// counterIndex is the check-and-set index for the counter: its
// ModifyIndex as read, or 0 (create only if absent).
func counterIndex(v view) uint64 {
	if v.counter == nil {
		return 0
	}
	return v.counter.ModifyIndex
}

// freeSlot is the lowest slot no slot key claims, or -1.
func freeSlot(slots api.KVPairs, dir string, limit int) int {
	taken := map[string]bool{}
	for _, kv := range slots {
		taken[kv.Key] = true
	}
	for i := range limit {
		if !taken[dir+strconv.Itoa(i)] {
			return i
		}
	}
	return -1
}
