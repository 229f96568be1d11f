package consul

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// session is the store of a held Consul lock (lock.Held over it): our
// line entry among the holders' places (and a semaphore's slot key),
// both acquired by our session, and the record our entry holds.
type session struct {
	b       *Backend
	kvKey   string // our line entry
	slotKey string // our slot key (a mutex's is slot 0)
	sid     string
	rec     record
}

var _ lock.LeaseStore = (*session)(nil)

// lease makes the lock.Lease of s on key, valid from granted.
func (s *session) lease(key string, granted time.Time) lock.Lease {
	return lock.NewLease(lock.Grant{
		Key: key, Owner: s.rec.Owner, Token: s.rec.Token, TTL: time.Duration(s.rec.TTLms) * time.Millisecond,
		Granted: granted, Slot: s.rec.Slot, Limit: s.rec.Limit,
	}, s)
}

// Renew renews our session (a full TTL from when Consul takes it: at the
// earliest when we sent it) and, alongside, checks that our entry is still
// held by it: a break destroys the session, and an entry deleted by other
// means must read as "not yours" too. Either answer of "gone" is
// lock.ErrNotHeld; anything else is transient.
func (s *session) Renew(ctx context.Context, l *lock.Held) error {
	renewed := make(chan error, 1)
	go func() { renewed <- s.b.renewSession(ctx, s.sid) }()
	ok, _, _, err := s.b.txn(ctx, "check "+l.Key(), api.TxnOps{kvOp(api.KVCheckSession, s.kvKey, nil, 0, s.sid)})
	rerr := <-renewed
	switch {
	case errors.Is(rerr, errSessionGone):
		return fmt.Errorf("%s: %w", l.Key(), rerr)
	case err == nil && !ok:
		return fmt.Errorf("%s: our lock entry was deleted (broken?): %w", l.Key(), lock.ErrNotHeld)
	case rerr != nil:
		return rerr
	}
	return err
}

// Release deletes our entry and slot if our session still holds them, then
// destroys the session (deleted first, the slot gets no lock-delay).
// lock.ErrNotHeld when it no longer did.
func (s *session) Release(ctx context.Context, l *lock.Held) error {
	ok, _, _, err := s.b.txn(ctx, "release "+l.Key(), dropOps(s.kvKey, s.slotKey, s.sid))
	s.b.destroy(ctx, s.sid) // in any case: after a break it is gone already
	if err != nil {
		return err
	}
	if !ok {
		return l.NotOurs()
	}
	return nil
}

// Resume implements lock.Backend: a holder of h.Key must still be h's
// owner with h's token; the lease is its entry, on the session that holds
// it now (a hold's).
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	v, _, err := b.readKey(ctx, "read "+h.Key, h.Key)
	if err != nil {
		return nil, err
	}
	hs := holders(v.line)
	i := slices.IndexFunc(hs, func(e entry) bool { return e.rec.Owner == h.Owner && e.rec.Token == h.Token && e.kv.Session != "" })
	if i < 0 {
		return nil, fmt.Errorf("%s: %w", h.Key, lock.ErrNotHeld)
	}
	s := &session{b: b, kvKey: hs[i].kv.Key, slotKey: b.slotKey(h.Key, hs[i].rec.Slot), sid: hs[i].kv.Session, rec: hs[i].rec}
	return s.lease(h.Key, granted), nil
}

// dropOps delete a holder's entry and slot key ("": none yet), each only
// if session sid holds it.
func dropOps(kvKey, slotKey, sid string) (ops api.TxnOps) {
	for _, k := range []string{kvKey, slotKey} {
		if k != "" {
			ops = append(ops, kvOp(api.KVCheckSession, k, nil, 0, sid), kvOp(api.KVDelete, k, nil, 0, ""))
		}
	}
	return ops
}

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
	if errors.As(err, &short) && short.least > d {
		hsid, err = s.b.createSession(ctx, short.least)
	}
	if err != nil {
		return 0, err
	}
	rec := s.rec
	rec.Hold, rec.HoldMs, rec.TTLms, rec.HeldAt = mode, d.Milliseconds(), d.Milliseconds(), start
	ops := append(moveOps(s.kvKey, rec.encode(), s.sid, hsid), moveOps(s.slotKey, []byte(hsid), s.sid, hsid)...)
	ok, _, _, err := s.b.txn(ctx, "hold "+l.Key(), ops)
	if err != nil {
		ok, err = s.settle(ctx, l.Key(), hsid, d, err)
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

// settle decides a hold whose transaction (moving our entry to the new
// session hsid, of TTL d) failed with txnErr, reply lost or never sent, by
// reading the entry back with a consistent read (the leader checks that it
// still leads first, so the answer is not a stale copy). On hsid: the move
// was applied (true). Gone, or on a session neither ours nor hsid: the move
// can never apply (it checks the old session holds the entry, and nothing
// moves an entry back to it), so hsid holds nothing (false: Hold destroys
// it, lock.ErrNotHeld). Still on the old session, or unreadable: an error,
// and hsid is left alone. A read cannot see a request still on its way,
// which may yet move the entry to hsid; destroying hsid then would delete
// the lock (its behavior is delete) while Hold reported an error, which
// keeps the old expiry. A hsid the entry never reaches holds nothing and
// expires by itself: it costs the servers one session's state for its TTL
// (up to twice that).
func (s *session) settle(ctx context.Context, key, hsid string, d time.Duration, txnErr error) (bool, error) {
	cause := txnErr
	if ue := (*lock.UnavailableError)(nil); errors.As(txnErr, &ue) {
		cause = ue.Err // txn's: the op and servers are named again below
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.b.connTO)
	defer cancel()
	var kv *api.KVPair
	if err := s.b.call(func(c *api.Client) (err error) {
		kv, _, err = c.KV().Get(s.kvKey, (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx))
		return err
	}); err != nil {
		return false, s.b.opError(fmt.Sprintf("hold %s (no answer, and the lock could not be read back: it is held either for %s more or until it was due to expire)", key, d), cause)
	}
	switch {
	case kv != nil && kv.Session == hsid:
		return true, nil
	case kv != nil && kv.Session == s.sid:
		return false, s.b.opError(fmt.Sprintf("hold %s (not applied: the lock is still held until it was due to expire, or for %s more should the request still arrive)", key, d), cause)
	}
	return false, nil
}
