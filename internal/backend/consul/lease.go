package consul

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Lease is a held Consul lock: our line entry among the holders' places
// (and a semaphore's slot key), both acquired by our session.
type Lease struct {
	b       *Backend
	key     string
	kvKey   string // our line entry
	slotKey string // our slot key (a mutex's is slot 0)
	sid     string
	rec     record
	granted time.Time
}

var (
	_ lock.Lease   = (*Lease)(nil)
	_ lock.Slotted = (*Lease)(nil)
)

func (l *Lease) Key() string   { return l.key }
func (l *Lease) Token() uint64 { return l.rec.Token }
func (l *Lease) Owner() string { return l.rec.Owner }

// Granted is the monotonic time taken just before the request that made
// the lease valid: the session's creation, or a waiter's renewal sent
// with its takeover.
func (l *Lease) Granted() time.Time { return l.granted }

// Slot implements lock.Slotted (0 for a mutex).
func (l *Lease) Slot() int { return l.rec.Slot }

// Alerts implements lock.Lease: Consul sends no news; renewals find out.
func (l *Lease) Alerts() <-chan struct{} { return nil }

// Renew renews our session (a full TTL from when Consul takes it: at the
// earliest when we sent it) and, alongside, checks that our entry is still
// held by it: a break destroys the session, and an entry deleted by other
// means must read as "not yours" too. Either answer of "gone" is
// lock.ErrNotHeld; anything else is transient.
func (l *Lease) Renew(ctx context.Context) error {
	renewed := make(chan error, 1)
	go func() { renewed <- l.b.renewSession(ctx, l.sid) }()
	ok, _, err := l.b.txn(ctx, "check "+l.key, api.TxnOps{kvOp(api.KVCheckSession, l.kvKey, nil, 0, l.sid)})
	rerr := <-renewed
	switch {
	case errors.Is(rerr, errSessionGone):
		return fmt.Errorf("%s: %w: %w", l.key, rerr, lock.ErrNotHeld)
	case err == nil && !ok:
		return fmt.Errorf("%s: our lock entry was deleted (broken?): %w", l.key, lock.ErrNotHeld)
	case rerr != nil:
		return rerr
	}
	return err
}

// Release deletes our entry and slot if our session still holds them, then
// destroys the session (deleted first, the slot gets no lock-delay).
// lock.ErrNotHeld when it no longer did.
func (l *Lease) Release(ctx context.Context) error {
	ok, _, err := l.b.txn(ctx, "release "+l.key, l.b.dropOps(l.kvKey, l.slotKey, l.sid))
	// Destroy in any case: after a break it is gone already, and a failed
	// destroy only leaves a session that expires by itself.
	_ = l.b.destroySession(ctx, l.sid)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", l.key, lock.ErrNotHeld)
	}
	return nil
}

// Handle implements lock.Lease.
func (l *Lease) Handle() lock.Handle {
	return lock.Handle{Key: l.key, Owner: l.rec.Owner, Token: l.rec.Token, TTLms: l.rec.TTLms}
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
		return &Lease{b: b, key: h.Key, kvKey: e.kv.Key, slotKey: b.slotKey(h.Key, e.rec.Slot), sid: e.kv.Session, rec: e.rec, granted: granted}, nil
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
