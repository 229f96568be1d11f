package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Lease is a held slot of the store (a mutex is a semaphore of one).
type Lease struct {
	s       *Store
	e       *entry
	granted time.Time
	limit   int
}

func (l *Lease) Key() string             { return l.e.key }
func (l *Lease) Token() uint64           { return l.e.token }
func (l *Lease) Owner() string           { return l.e.owner }
func (l *Lease) Granted() time.Time      { return l.granted }
func (l *Lease) Alerts() <-chan struct{} { return nil }
func (l *Lease) Slot() int               { return l.e.slot }
func (l *Lease) notOurs() error          { return fmt.Errorf("%s: %w", l.e.key, lock.ErrNotHeld) }
func (l *Lease) ours(now time.Time) bool { return l.s.holds(l.e, now) }
func (s *Store) holds(e *entry, now time.Time) bool {
	k := s.keys[e.key]
	return k != nil && e.slot < len(k.slots) && k.slots[e.slot] == e && e.live(now)
}

// Renew implements lock.Lease, subject to the store's Faults.
func (l *Lease) Renew(ctx context.Context) error {
	l.s.mu.Lock()
	l.s.renewals++
	f := l.s.faults
	l.s.mu.Unlock()
	if f.Stall {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.Err != nil {
		return f.Err
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	now := time.Now()
	if !l.ours(now) {
		return l.notOurs()
	}
	l.e.expires = now.Add(l.e.ttl)
	return nil
}

// Release implements lock.Lease.
func (l *Lease) Release(ctx context.Context) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if !l.s.free(l.e) {
		return l.notOurs()
	}
	return nil
}

// Hold implements lock.Lease.
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	now := time.Now()
	if !l.ours(now) {
		return l.notOurs()
	}
	l.e.expires, l.e.hold = now.Add(d), mode
	return nil
}

// Handle implements lock.Lease.
func (l *Lease) Handle() lock.Handle {
	return lock.Handle{Key: l.e.key, Owner: l.e.owner, Token: l.e.token, TTLms: l.e.ttl.Milliseconds()}
}
