package consul

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.Lease (a mutex and a semaphore slot alike): our
// entry (and slot) move to a new session of TTL d, in one transaction that
// checks our session still holds them (unlock, then lock with the new
// session); the entry keeps its CreateIndex, so its place in line. The old
// session is then destroyed. Consul keeps the hold between d and 2×d (its
// session timers), and a d below the servers' session_ttl_min is held for
// that minimum instead.
//
// A transaction whose reply is lost may have been applied: Hold then reads
// the entry back and acts on what is there (settle).
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	start := time.Now() // the hold's session lasts at least d from here
	hsid, err := l.b.createSession(ctx, d)
	var short *ttlError
	if errors.As(err, &short) && short.least() > d {
		hsid, err = l.b.createSession(ctx, short.least())
	}
	if err != nil {
		return err
	}
	rec := l.rec
	rec.Hold, rec.HoldMs, rec.TTLms, rec.HeldAt = mode, d.Milliseconds(), d.Milliseconds(), start
	ops := append(moveOps(l.kvKey, rec.encode(), l.sid, hsid), moveOps(l.slotKey, []byte(hsid), l.sid, hsid)...)
	ok, _, err := l.b.txn(ctx, "hold "+l.key, ops)
	if err != nil {
		ok, err = l.settle(ctx, hsid, err)
	}
	if err != nil {
		return err
	}
	if !ok {
		l.b.cleanup(ctx, hsid)
		return fmt.Errorf("%s: %w", l.key, lock.ErrNotHeld)
	}
	old := l.sid
	l.sid, l.rec = hsid, rec
	l.b.cleanup(ctx, old) // holds nothing now
	return nil
}

// moveOps move key, held by session from, to session to with value.
func moveOps(key string, value []byte, from, to string) api.TxnOps {
	return api.TxnOps{
		kvOp(api.KVCheckSession, key, nil, 0, from),
		kvOp(api.KVUnlock, key, nil, 0, from),
		kvOp(api.KVLock, key, value, 0, to),
	}
}

// settle decides a hold whose transaction failed with txnErr, reply lost
// or never sent, by reading our entry back: held by the new session, the
// move was applied; by the old, it was not (the new session is destroyed
// and txnErr returned); gone, the lease is. When it cannot tell it leaves
// both sessions alone and returns txnErr.
func (l *Lease) settle(ctx context.Context, hsid string, txnErr error) (bool, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.b.connTO)
	defer cancel()
	var kv *api.KVPair
	if err := l.b.call(func(c *api.Client) error {
		var err error
		kv, _, err = c.KV().Get(l.kvKey, qo(cctx))
		return err
	}); err != nil {
		return false, txnErr
	}
	switch {
	case kv != nil && kv.Session == hsid:
		return true, nil
	case kv != nil && kv.Session == l.sid:
		l.b.cleanup(ctx, hsid)
		return false, txnErr
	}
	return false, nil
}
