// Package memstore is an engine that lives in one process's memory, for
// the unit tests of the safety core (internal/runner, internal/renew,
// internal/acquire): a whole run can be driven against it without a
// server, and a test can make its renewals fail, stall or answer "not
// yours", and its tries fail (Faults). It keeps the contract of internal/lock as a real engine
// does (the conformance suite runs against it): leases expire by its own
// clock, tokens rise by the one token rule, a mutex is a semaphore of one.
// It is no product engine: nothing outside tests opens it.
package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Faults are what a test makes the store do to renewals and tries. The
// zero value is a healthy store.
type Faults struct {
	// Stall: a renewal gets no answer until its context ends, as from a
	// paused server.
	Stall bool
	// Err, when set, is every renewal's answer (lock.ErrNotHeld: the
	// engine says the lease is gone; anything else: a transient failure).
	Err error
	// Try, when set, is every try's answer (a transient
	// *lock.UnavailableError, say: the engine failing while one waits).
	Try error
	// Ledger, when set, is every run-ledger call's answer (ledger.go).
	Ledger error
}

// Store is the engine. Open it with New.
type Store struct {
	mu     sync.Mutex
	keys   map[string]*key
	faults Faults
	// released is closed (and replaced) whenever a slot is freed, to wake
	// the waiters (the Wake of their lock.Polling).
	released chan struct{}
	renewals int
	// ledger is each key's run ledger (ledger.go).
	ledger map[string]map[string][]byte
}

type key struct {
	limit int
	last  uint64 // the last token granted: tokens rise from it
	slots []*entry
}

// entry is one held slot.
type entry struct {
	key      string
	slot     int
	owner    string
	token    uint64
	meta     lock.Meta
	acquired time.Time
	ttl      time.Duration
	expires  time.Time
	hold     string
}

// New returns an empty store.
func New() *Store {
	return &Store{keys: map[string]*key{}, released: make(chan struct{})}
}

// SetFaults sets what renewals do from now on.
func (s *Store) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Renewals is how many renewals the store has answered (or stalled).
func (s *Store) Renewals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals
}

// Guarantee implements lock.Backend.
func (s *Store) Guarantee() string { return "memory: one process only (tests)" }

// Close implements lock.Backend.
func (s *Store) Close() error { return nil }

// live reports whether e holds its slot at now.
func (e *entry) live(now time.Time) bool { return e != nil && now.Before(e.expires) }

func (e *entry) holder(now time.Time) lock.Holder {
	return lock.Holder{
		Key: e.key, Owner: e.owner, Token: e.token, Meta: e.meta,
		AcquiredAt: e.acquired, TTL: e.ttl, ExpiresIn: e.expires.Sub(now), Hold: e.hold,
	}
}

// Contend implements lock.Backend: a polling contender, woken by releases.
func (s *Store) Contend(req lock.Request) lock.Contender {
	return &lock.Polling{
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) { return s.try(req) },
		Cap:     50 * time.Millisecond,
		Wake: func(ctx context.Context) (<-chan struct{}, func(), error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.released, func() {}, nil
		},
	}
}

// try grants a free slot of req.Key, or answers busy with the holder whose
// lease ends first and how long until it does.
func (s *Store) try(req lock.Request) (lock.Lease, time.Duration, error) {
	limit := max(req.Limit, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.Try != nil {
		return nil, -1, s.faults.Try
	}
	now := time.Now()
	k := s.keys[req.Key]
	if k == nil {
		k = &key{}
		s.keys[req.Key] = k
	}
	_, held := k.held(now)
	if len(held) == 0 {
		k.limit, k.slots = limit, make([]*entry, limit)
	} else if k.limit != limit {
		return nil, -1, &lock.LimitMismatchError{Key: req.Key, Want: limit, Have: k.limit}
	}
	for i, e := range k.slots {
		if e.live(now) {
			continue
		}
		k.last = lock.NextToken(k.last, lock.ClockMicros(now))
		e = &entry{
			key: req.Key, slot: i, owner: req.Owner, token: k.last, meta: req.Meta,
			acquired: now, ttl: req.TTL, expires: now.Add(req.TTL),
		}
		k.slots[i] = e
		return s.lease(e, now, limit), 0, nil
	}
	return nil, k.soonest(now), &lock.BusyError{Holder: lock.Oldest(held)}
}

// held is k's live slot holders, by slot, and their Holders.
func (k *key) held(now time.Time) (es []*entry, hs []lock.Holder) {
	for _, e := range k.slots {
		if e.live(now) {
			es, hs = append(es, e), append(hs, e.holder(now))
		}
	}
	return es, hs
}

// soonest is the time until the first live slot expires.
func (k *key) soonest(now time.Time) time.Duration {
	d := time.Duration(-1)
	for _, e := range k.slots {
		if e.live(now) && (d < 0 || e.expires.Sub(now) < d) {
			d = e.expires.Sub(now)
		}
	}
	return d
}

// free empties e's slot if e still holds it, and wakes the waiters.
// Call it with s.mu held.
func (s *Store) free(e *entry) bool {
	k := s.keys[e.key]
	if k == nil || e.slot >= len(k.slots) || k.slots[e.slot] != e || !e.live(time.Now()) {
		return false
	}
	k.slots[e.slot] = nil
	close(s.released)
	s.released = make(chan struct{})
	return true
}

// Inspect implements lock.Backend: the oldest holder.
func (s *Store) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[key]; k != nil {
		if _, hs := k.held(time.Now()); len(hs) > 0 {
			return lock.Oldest(hs), true, nil
		}
	}
	return lock.Holder{}, false, nil
}

// List implements lock.Backend.
func (s *Store) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []lock.Holder
	for _, k := range s.keys {
		_, held := k.held(time.Now())
		hs = append(hs, held...)
	}
	return lock.ListOldest(keyPrefix, hs), nil
}

// Break implements lock.Backend: the holder with token (any holder's
// token), or with token 0 every holder, as lock.BreakHolders rules.
func (s *Store) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		es []*entry
		hs []lock.Holder
	)
	if k := s.keys[key]; k != nil {
		es, hs = k.held(time.Now())
	}
	return lock.BreakHolders(key, hs, token, func(i int) (bool, error) { return s.free(es[i]), nil })
}

// Resume implements lock.Backend.
func (s *Store) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[h.Key]; k != nil {
		for _, e := range k.slots {
			if e.live(time.Now()) && e.owner == h.Owner && e.token == h.Token {
				return s.lease(e, time.Now(), k.limit), nil
			}
		}
	}
	return nil, fmt.Errorf("%s: %w", h.Key, lock.ErrNotHeld)
}
