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

// waiter is one process's place in KEY's line: lock.Line's store, its
// session and, once it has joined, its entry. A try-once joins, reads the
// line in the same transaction, and takes over at once when it is within
// the first limit entries (and no one waits ahead of it); else it is busy
// and Leave destroys its session, which deletes its entry. A waiter's
// session is kept alive by lock.Line (Keeper), and it watches only what
// can make it next (watch.go).
type waiter struct {
	b     *Backend
	req   lock.Request
	limit int

	sid     string
	granted time.Time // just before the session was created
	joined  bool      // our entry is in line
	kept    bool      // lock.Line keeps our session alive: we wait
	v       view      // the last read
	pos     int       // our place in it

	// block is what Watch waits on, set by the last busy Look (watch.go);
	// nil when a lock-delay holds our slot back: Watch then polls.
	block func(ctx context.Context)
}

var _ lock.PlaceKeeper = (*waiter)(nil)

// Contend implements lock.Backend: no I/O until the first Try.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return lock.NewLine(req, b.waiter(req))
}

func (b *Backend) waiter(req lock.Request) *waiter {
	return &waiter{b: b, req: req, limit: max(req.Limit, 1)}
}

// Join implements lock.LineStore: a new session, whose entry the next
// Look puts at the back of the line (read).
func (w *waiter) Join(ctx context.Context) error {
	w.Leave()
	w.granted = time.Now()
	sid, err := w.b.createSession(ctx, w.req.TTL)
	w.sid = sid
	return err
}

// Look implements lock.LineStore: one read of the line (joining it
// first); we may take over when our entry is among the holders' places.
func (w *waiter) Look(ctx context.Context) (lock.LineLook, error) {
	v, err := w.read(ctx)
	if err != nil {
		return lock.LineLook{}, err
	}
	w.v, w.pos = v, v.position(w.sid)
	if w.pos < 0 { // our session expired since: join again
		return lock.LineLook{Lost: true}, nil
	}
	if w.pos > 0 { // the first in line sets the limit: behind it, ours must match
		if err := lock.Refuse(w.req.Key, w.limit, nil, []lock.SeenLimit{{Have: v.line[0].rec.limit()}}, false); err != nil {
			return lock.LineLook{}, err
		}
	}
	look := lock.LineLook{Ahead: w.pos, Free: w.limit}
	if w.pos >= w.limit {
		hs := holders(v.line)
		look.Holder = lock.Oldest(describe(w.req.Key, hs))
		ahead := v.line[w.pos-1].kv // wait until it is modified or deleted
		w.block = func(ctx context.Context) { w.b.waitPast(ctx, ahead.Key, ahead.ModifyIndex) }
		if w.limit > 1 && w.pos == w.limit {
			w.block = w.b.blockOnHolders(w.b.lineDir(w.req.Key), hs)
		}
	}
	return look, nil
}

// read reads the line, the counter and the slots in one transaction; the
// first read of a session joins the line in it first (a "lock" of our
// entry with our session). Any read that contains our entry shows every
// entry ahead of it that still exists: entries are only ever created at
// the back, so even a read served by a lagging server cannot show us
// ahead of a live entry. A session gone makes the join fail: the view is
// then empty, and Look says the place is lost.
func (w *waiter) read(ctx context.Context) (view, error) {
	var join api.TxnOps
	if !w.joined {
		rec := record{Record: lock.NewRecord(w.req, time.Now()), Limit: w.req.Limit}
		join = api.TxnOps{kvOp(api.KVLock, w.b.lineDir(w.req.Key)+w.sid, rec.encode(), 0, w.sid)}
	}
	v, ok, err := w.b.readKey(ctx, "read the line of "+w.req.Key, w.req.Key, join...)
	w.joined = w.joined || ok
	return v, err
}

// Take implements lock.LineStore: it makes our entry, which the last Look
// found among the holders' places, the holder (takeOver). Validity counts
// from just before the session was created, or, for a waiter (its
// keep-alive running), from just before a renewal sent alongside, or a
// later one that answers (lock.TakeRenewed). A session found gone means
// whatever was taken went with it: Look finds out and joins again.
func (w *waiter) Take(ctx context.Context) (lock.Lease, error) {
	v, me := w.v, w.v.line[w.pos]
	slot := v.freeSlot(w.b.slotDir(w.req.Key), w.limit)
	if slot < 0 {
		return nil, lock.ErrLookAgain // a slot not yet given back
	}
	last, err := w.b.lastToken(w.req.Key, v.counter)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	rec := me.rec
	rec.Token, rec.AcquiredAt, rec.Slot, rec.Limit = lock.NextToken(last, lock.ClockMicros(now)), now, slot, w.req.Limit
	s := &session{b: w.b, kvKey: me.kv.Key, slotKey: w.b.slotKey(w.req.Key, slot), sid: w.sid, rec: rec}
	take := func(ctx context.Context) error { return w.takeOver(ctx, s, me.kv.ModifyIndex) }
	granted := w.granted
	if w.kept {
		granted, err = lock.TakeRenewed(ctx, w.req.TTL, w.Keeper(), take)
	} else {
		err = take(ctx)
	}
	if errors.Is(err, lock.ErrNotHeld) {
		return nil, lock.ErrLookAgain
	}
	if err != nil {
		return nil, err
	}
	return s.lease(w.req.Key, granted), nil
}

// takeOver is the takeover's one transaction: it raises the token counter
// (by the one token rule, lock.NextToken, on distlock's wall clock:
// Consul's indexes start again when its data is lost, tokens must not),
// writes s's record (its token) into our entry and claims s's slot (a
// mutex's is slot 0); it applies only if the counter and our entry (at
// index) are as read and the slot is free. ErrLookAgain when they are not
// (lost a race); busy when Consul's lock-delay holds the slot back.
func (w *waiter) takeOver(ctx context.Context, s *session, index uint64) error {
	ops := api.TxnOps{
		// the counter, if as read (absent: index 0 creates it only if still absent)
		kvOp(api.KVCAS, w.b.tokenKey(w.req.Key), []byte(strconv.FormatUint(s.rec.Token, 10)), w.v.counter.ModifyIndex, ""),
		kvOp(api.KVCheckIndex, s.kvKey, nil, index, ""),
		kvOp(api.KVLock, s.kvKey, s.rec.encode(), 0, w.sid),
		kvOp(api.KVCheckNotExists, s.slotKey, nil, 0, ""),
		kvOp(api.KVLock, s.slotKey, []byte(w.sid), 0, w.sid),
	}
	ok, _, why, err := w.b.txn(ctx, "take over "+w.req.Key, ops)
	switch {
	case err != nil || ok:
		return err
	case strings.Contains(why, "lock delay"):
		// A slot Consul holds back after its holder's session was
		// invalidated (lockDelay): busy, lock.Line naming the last holder
		// seen, and Watch polls (nothing in the line changes when the
		// delay ends).
		w.block = nil
		return &lock.BusyError{Holder: lock.Holder{Key: w.req.Key, ExpiresIn: -1, Meta: lock.Meta{Host: "(Consul's lock-delay after the last holder's session ended)"}}}
	}
	return lock.ErrLookAgain
}

// Leave implements lock.LineStore: destroying the session deletes our
// entry (and anything else it holds).
func (w *waiter) Leave() {
	w.b.cleanup(context.Background(), w.sid)
	w.sid, w.joined, w.kept = "", false, false
}
