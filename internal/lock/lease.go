package lock

// The one lease type of every engine.
//
// Every engine's lease knows the same things and answers the same
// questions: the key, the owner id, the fencing token, the slot of a
// semaphore and its limit, the TTL its handle names, and the monotonic
// time just before the request that granted it was sent. Held keeps them
// and answers Key, Token, Owner, Granted, Slot, Handle and Alerts once for
// all. What truly differs between engines is how a lease is renewed,
// released and held, and what it must keep between those calls to do so:
// an etcd lease id and create revision, a ZooKeeper session and lock
// node, the open flock'd files of the file engine, the masters of a
// Redlock quorum with the record fields it writes back, a SQL row's slot.
// That is the LeaseStore an engine supplies. Its methods are given the
// Held, so a store keeps only what is its own, never a second copy of the
// key, owner or token.
//
// The extras only some engines have come through optional interfaces of
// the store: Alerter (ZooKeeper's watch on its own node), LeaseIDer
// (etcd's lease id in the handle) and FileLocked (the file engine's
// flocks: Held.LockFiles is nil unless its store holds the lock on open
// files, and the runner's timing depends on that answer).

import (
	"context"
	"fmt"
	"os"
	"time"
)

// LeaseStore is what an engine does for a lease it granted: the
// operations of lock.Lease that differ between engines. Each is
// owner-checked by the engine and answers as lock.Lease's does
// (ErrNotHeld when the lease is no longer ours, any other error
// transient).
type LeaseStore interface {
	Renew(ctx context.Context, l *Held) error
	Release(ctx context.Context, l *Held) error
	// Hold keeps the lock for d with no renewals, marked with mode; it
	// returns the TTL the lease's handle names from then on (most engines:
	// d; an engine whose records keep the TTL asked for returns l.TTL()).
	Hold(ctx context.Context, l *Held, d time.Duration, mode string) (time.Duration, error)
}

// Alerter is implemented by a LeaseStore whose engine tells it when the
// lease may have been taken away (lock.Lease.Alerts).
type Alerter interface {
	Alerts() <-chan struct{}
}

// LeaseIDer is implemented by a LeaseStore whose engine names its lease
// by an id of its own (etcd), carried in the handle.
type LeaseIDer interface {
	LeaseID() int64
}

// Grant is what an engine knows of a lease it has just granted (or
// resumed from a handle).
type Grant struct {
	Key   string
	Owner string
	Token uint64
	// TTL is the TTL the lease's handle names.
	TTL time.Duration
	// Granted is the monotonic time taken just before the request that
	// granted the lease was sent (lock.Lease.Granted).
	Granted time.Time
	// Slot is a semaphore's slot; Limit its limit (0 or 1 for a mutex).
	Slot  int
	Limit int
}

// Held is a granted lease: the Grant, and the engine's store that renews,
// releases and holds it.
type Held struct {
	g     Grant
	ttl   time.Duration
	store LeaseStore
}

var (
	_ Lease      = (*Held)(nil)
	_ Slotted    = (*Held)(nil)
	_ FileLocked = (*Held)(nil)
)

// NewLease makes the lease of g, renewed, released and held by s.
func NewLease(g Grant, s LeaseStore) Lease {
	return &Held{g: g, ttl: g.TTL, store: s}
}

// StoreOf is the store of a lease made by NewLease (nil for any other):
// for an engine's own tests and diagnostics.
func StoreOf(l Lease) LeaseStore {
	if h, ok := l.(*Held); ok {
		return h.store
	}
	return nil
}

func (l *Held) Key() string        { return l.g.Key }
func (l *Held) Token() uint64      { return l.g.Token }
func (l *Held) Owner() string      { return l.g.Owner }
func (l *Held) Granted() time.Time { return l.g.Granted }

// Slot implements Slotted: a semaphore's slot, as the engine numbers it.
func (l *Held) Slot() int { return l.g.Slot }

// Limit is the semaphore's limit (0 or 1 for a mutex).
func (l *Held) Limit() int { return l.g.Limit }

// TTL is the TTL the lease's handle names: the one asked for, or the last
// hold's (LeaseStore.Hold).
func (l *Held) TTL() time.Duration { return l.ttl }

// NotOurs is ErrNotHeld naming the key.
func (l *Held) NotOurs() error { return fmt.Errorf("%s: %w", l.g.Key, ErrNotHeld) }

// Renew implements Lease.
func (l *Held) Renew(ctx context.Context) error { return l.store.Renew(ctx, l) }

// Release implements Lease.
func (l *Held) Release(ctx context.Context) error { return l.store.Release(ctx, l) }

// Hold implements Lease.
func (l *Held) Hold(ctx context.Context, d time.Duration, mode string) error {
	ttl, err := l.store.Hold(ctx, l, d, mode)
	if err != nil {
		return err
	}
	l.ttl = ttl
	return nil
}

// Handle implements Lease.
func (l *Held) Handle() Handle {
	h := Handle{Key: l.g.Key, Owner: l.g.Owner, Token: l.g.Token, TTLms: l.ttl.Milliseconds()}
	if id, ok := l.store.(LeaseIDer); ok {
		h.LeaseID = id.LeaseID()
	}
	return h
}

// Alerts implements Lease: the store's, when its engine has such news.
func (l *Held) Alerts() <-chan struct{} {
	if a, ok := l.store.(Alerter); ok {
		return a.Alerts()
	}
	return nil
}

// LockFiles implements FileLocked: the open files that hold the lock when
// the store keeps it on open files (the file engine), nil for any other
// store and once the lease is released.
func (l *Held) LockFiles() []*os.File {
	if f, ok := l.store.(FileLocked); ok {
		return f.LockFiles()
	}
	return nil
}
