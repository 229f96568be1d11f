package memstore

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// slotStore is the lock.LeaseStore of a held slot of the store (a mutex
// is a semaphore of one): the entry that is ours.
type slotStore struct {
	s *Store
	e *entry
}

// lease makes the lock.Lease of e, granted at granted.
func (s *Store) lease(e *entry, granted time.Time, limit int) lock.Lease {
	g := lock.Grant{Key: e.key, Owner: e.owner, Token: e.token, TTL: e.ttl, Granted: granted, Slot: e.slot, Limit: limit}
	return lock.NewLease(g, &slotStore{s: s, e: e})
}

func (st *slotStore) ours(now time.Time) bool { return st.s.holds(st.e, now) }
func (s *Store) holds(e *entry, now time.Time) bool {
	k := s.keys[e.key]
	return k != nil && e.slot < len(k.slots) && k.slots[e.slot] == e && e.live(now)
}

// Renew implements lock.LeaseStore, subject to the store's Faults.
func (st *slotStore) Renew(ctx context.Context, l *lock.Held) error {
	st.s.mu.Lock()
	st.s.renewals++
	f := st.s.faults
	st.s.mu.Unlock()
	if f.Stall {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.Err != nil {
		return f.Err
	}
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	now := time.Now()
	if !st.ours(now) {
		return l.NotOurs()
	}
	st.e.expires = now.Add(st.e.ttl)
	return nil
}

// Release implements lock.LeaseStore.
func (st *slotStore) Release(ctx context.Context, l *lock.Held) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if !st.s.free(st.e) {
		return l.NotOurs()
	}
	return nil
}

// Hold implements lock.LeaseStore; the handle keeps naming the TTL asked
// for.
func (st *slotStore) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	now := time.Now()
	if !st.ours(now) {
		return 0, l.NotOurs()
	}
	st.e.expires, st.e.hold = now.Add(d), mode
	return l.TTL(), nil
}
