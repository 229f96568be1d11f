package file

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// slotLock is the lock.LeaseStore of a held slot of a key: the flocks
// that hold it and the record (sidecar) that names us. A mutex is slot 0 of 1: it holds the key's lock
// file exclusively and its record is the key's "<base>.json" (paths.go).
// Slot i of a semaphore holds its own lock file exclusively and the key's
// lock file shared, which keeps mutex acquirers out (semaphore.go).
type slotLock struct {
	mu sync.Mutex
	// files are the flocks held, the slot's own lock file (LOCK_EX) first,
	// then a semaphore's shared one on the key's lock file; nil once let go.
	files    []*os.File
	meta     meta
	metaPath string
	recLock  string // the key's record lock (record.go)
	log      *slog.Logger
	warned   recordWarner
}

var (
	_ lock.LeaseStore = (*slotLock)(nil)
	_ lock.FileLocked = (*slotLock)(nil) // so the lease is lock.FileLocked
)

// grant makes the lease of req on slot, whose flocks files hold: a new
// fencing token and the holder's first record, written under the record
// lock so that a break comparing an older holder's token never removes it.
// On error the caller still owns files.
func (b *Backend) grant(ctx context.Context, req lock.Request, slot int, files []*os.File, granted time.Time) (lock.Lease, error) {
	p := b.keyPaths(req.Key)
	now := time.Now()
	tok, err := nextToken(p.token(), now) // fsync'd: before the record lock, not under it
	if err != nil {
		return nil, fmt.Errorf("fencing counter for %s: %w", req.Key, err)
	}
	m := meta{
		Key: req.Key, Owner: req.Owner, Token: tok,
		Host: req.Meta.Host, PID: req.Meta.PID, User: req.Meta.User, Command: req.Meta.Command, Note: req.Meta.Note,
		AcquiredAt: now, RenewedAt: now, TTLms: req.TTL.Milliseconds(),
	}
	if req.Limit > 1 {
		m.Limit, m.Slot = req.Limit, slot
	}
	_, recordPath := p.slot(req.Limit, slot)
	l, st := b.newLease(files, m, recordPath, granted)
	if err := st.record().write(ctx, func() error { return writeMeta(recordPath, m) }); err != nil {
		return nil, fmt.Errorf("holder metadata for %s: %w", req.Key, err)
	}
	return l, nil
}

// newLease makes the lease of the slot m names, whose flocks files hold
// and whose record is at metaPath; st is its store.
func (b *Backend) newLease(files []*os.File, m meta, metaPath string, granted time.Time) (l lock.Lease, st *slotLock) {
	st = &slotLock{files: files, meta: m, metaPath: metaPath, recLock: b.keyPaths(m.Key).recLock(), log: b.log}
	g := lock.Grant{Key: m.Key, Owner: m.Owner, Token: m.Token, TTL: time.Duration(m.TTLms) * time.Millisecond, Granted: granted, Slot: m.Slot, Limit: m.Limit}
	return lock.NewLease(g, st), st
}

// LockFiles implements lock.FileLocked: the flock'd lock files.
func (l *slotLock) LockFiles() []*os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.files)
}

// record names the sidecar that names us.
func (l *slotLock) record() ownRecord {
	return ownRecord{key: l.meta.Key, owner: l.meta.Owner, token: l.meta.Token, path: l.metaPath, lockPath: l.recLock}
}

// letGo drops the flocks, the slot's own first, then touches its lock file,
// which wakes a mutex's waiters (wake_linux.go). Call it with l.mu held.
func (l *slotLock) letGo() {
	for _, f := range l.files {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	touchReleased(l.files[0])
	for _, f := range l.files {
		f.Close()
	}
	l.files = nil
}

// Renew implements lock.LeaseStore: the flock cannot expire, so renewing checks
// (under the key's record lock) that the lock was not broken and records
// the renewal for status. A record that cannot be written (a full or
// read-only lock directory) does not cost the lock: Renew warns once per
// streak of such failures and succeeds; only a break (the sidecar gone or
// naming someone else) is lock.ErrNotHeld.
func (l *slotLock) Renew(ctx context.Context, _ *lock.Held) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		return lock.ErrNotHeld
	}
	m := l.meta
	m.RenewedAt = time.Now()
	unwritten, err := l.record().renew(ctx, func() error { return writeMeta(l.metaPath, m) })
	if err != nil {
		return err
	}
	l.warned.note(l.log, m.Key, unwritten)
	if unwritten == nil {
		l.meta.RenewedAt = m.RenewedAt
	}
	return nil
}

// Release implements lock.LeaseStore. The flocks are always let go (they are
// ours by the kernel's word); ErrNotHeld says the lock had been broken
// meanwhile. A sidecar that cannot be removed (a read-only lock directory)
// is left behind with a warning: the lock is free all the same, and a
// sidecar whose flock is free names no holder.
func (l *slotLock) Release(ctx context.Context, _ *lock.Held) error {
	var rmErr error
	err := l.letGoIfOurs(ctx, func() error {
		rmErr = os.Remove(l.metaPath)
		return nil
	})
	if rmErr != nil {
		l.log.Warn("released the lock, but cannot remove its record (it names no holder now)", "key", l.meta.Key, "error", rmErr)
	}
	return err
}

// letGoIfOurs is the end of a lease in this process (Release, Hold): under
// the record lock, when the record still names us, change runs (removing
// it or writing a hold); the flocks are let go in any case, after change.
// ErrNotHeld says the lock had been broken.
func (l *slotLock) letGoIfOurs(ctx context.Context, change func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		return lock.ErrNotHeld
	}
	ours, err := l.record().release(ctx, change, l.letGo)
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	return nil
}
