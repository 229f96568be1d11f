package consul

import (
	"context"
	"errors"
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
func (s *session) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	start := time.Now() // the hold's session lasts at least d from here
	hsid, err := s.b.createSession(ctx, d)
	var short *ttlError
	if errors.As(err, &short) && short.least() > d {
		hsid, err = s.b.createSession(ctx, short.least())
	}
	if err != nil {
		return 0, err
	}
	rec := s.rec
	rec.Hold, rec.HoldMs, rec.TTLms, rec.HeldAt = mode, d.Milliseconds(), d.Milliseconds(), start
	ops := append(moveOps(s.kvKey, rec.encode(), s.sid, hsid), moveOps(s.slotKey, []byte(hsid), s.sid, hsid)...)
	ok, _, err := s.b.txn(ctx, "hold "+l.Key(), ops)
	if err != nil {
		ok, err = s.settle(ctx, hsid, err)
	}
	if err != nil {
		return 0, err
	}
	if !ok {
		s.b.cleanup(ctx, hsid)
		return 0, l.NotOurs()
	}
	old := s.sid
	s.sid, s.rec = hsid, rec
	s.b.cleanup(ctx, old) // holds nothing now
	return d, nil
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
func (s *session) settle(ctx context.Context, hsid string, txnErr error) (bool, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.b.connTO)
	defer cancel()
	var kv *api.KVPair
	if err := s.b.call(func(c *api.Client) error {
		var err error
		kv, _, err = c.KV().Get(s.kvKey, qo(cctx))
		return err
	}); err != nil {
		return false, txnErr
	}
	switch {
	case kv != nil && kv.Session == hsid:
		return true, nil
	case kv != nil && kv.Session == s.sid:
		s.b.cleanup(ctx, hsid)
		return false, txnErr
	}
	return false, nil
}
