package consul

import (
	"context"
	"errors"
	"fmt"
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
	ok, _, err := s.b.txn(ctx, "check "+l.Key(), api.TxnOps{kvOp(api.KVCheckSession, s.kvKey, nil, 0, s.sid)})
	rerr := <-renewed
	switch {
	case errors.Is(rerr, errSessionGone):
		return fmt.Errorf("%s: %w: %w", l.Key(), rerr, lock.ErrNotHeld)
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
	ok, _, err := s.b.txn(ctx, "release "+l.Key(), s.b.dropOps(s.kvKey, s.slotKey, s.sid))
	// Destroy in any case: after a break it is gone already, and a failed
	// destroy only leaves a session that expires by itself.
	_ = s.b.destroySession(ctx, s.sid)
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
	v, err := b.readKey(ctx, h.Key)
	if err != nil {
		return nil, err
	}
	for _, e := range holders(v.line) {
		if e.rec.Owner != h.Owner || e.rec.Token != h.Token || e.kv.Session == "" {
			continue
		}
		s := &session{b: b, kvKey: e.kv.Key, slotKey: b.slotKey(h.Key, e.rec.Slot), sid: e.kv.Session, rec: e.rec}
		return s.lease(h.Key, granted), nil
	}
	return nil, fmt.Errorf("%s: %w", h.Key, lock.ErrNotHeld)
}

// dropOps delete a holder's entry and slot key ("": none yet), each only
// if session sid holds it.
func (b *Backend) dropOps(kvKey, slotKey, sid string) api.TxnOps {
	ops := api.TxnOps{kvOp(api.KVCheckSession, kvKey, nil, 0, sid), kvOp(api.KVDelete, kvKey, nil, 0, "")}
	if slotKey != "" {
		ops = append(ops, kvOp(api.KVCheckSession, slotKey, nil, 0, sid), kvOp(api.KVDelete, slotKey, nil, 0, ""))
	}
	return ops
}
