package file

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// slotLock is the lock.LeaseStore of a held slot of a key, of any limit
// (slots.go): the flocks that hold it and the record that names us.
type slotLock struct {
	mu sync.Mutex
	// files are the flocks held, the slot's own lock file (LOCK_EX) first,
	// then a semaphore's shared one on the key's lock file; nil once let go.
	files    []*os.File
	meta     meta
	metaPath string
	recLock  string // the key's record lock (record.go)
	log      *slog.Logger
	failing  bool // the last renewal could not write the record
}

var (
	_ lock.LeaseStore = (*slotLock)(nil)
	_ lock.FileLocked = (*slotLock)(nil) // the lease hands its flock'd files to the group watcher
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
	m := meta{Key: req.Key, Record: lock.NewRecord(req, now), Token: tok, RenewedAt: now}
	m.QueuedAt = time.Time{} // no line: a holder has never queued
	m.ProcID = ownProcID(m.PID)
	recordPath := p.record() // a mutex (slot 0 of 1): the key's own, as every version has it
	if req.Limit > 1 {
		m.Limit, m.Slot = req.Limit, slot
		_, recordPath = p.semSlot(slot)
	}
	l := b.newLease(files, m, recordPath, granted)
	if err := withRecordLock(ctx, p.recLock(), func() error { return writeMeta(recordPath, m) }); err != nil {
		return nil, fmt.Errorf("holder metadata for %s: %w", req.Key, err)
	}
	return l, nil
}

// newLease makes the lease of the slot m names, whose flocks files hold
// and whose record is at metaPath.
func (b *Backend) newLease(files []*os.File, m meta, metaPath string, granted time.Time) lock.Lease {
	st := &slotLock{files: files, meta: m, metaPath: metaPath, recLock: b.keyPaths(m.Key).recLock(), log: b.log}
	g := lock.Grant{Key: m.Key, Owner: m.Owner, Token: m.Token, TTL: time.Duration(m.TTLms) * time.Millisecond, Granted: granted, Slot: m.Slot, Limit: m.Limit}
	return lock.NewLease(g, st)
}

// LockFiles implements lock.FileLocked: the flock'd lock files.
func (l *slotLock) LockFiles() []*os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.files)
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

// Renew implements lock.LeaseStore. The flock cannot expire, so renewing
// checks, under the key's record lock, that the record still names us (a
// break removes it: lock.ErrNotHeld) and rewrites it for status. A record
// that cannot be written (a full or read-only lock directory) does not
// cost the lock: Renew touches it instead (its mtime keeps status honest
// where the file system allows that much), warns once per streak of such
// failures and succeeds. A record lock that cannot be taken (stuck, or its
// file cannot be made) leaves Renew a plain check, writing nothing.
func (l *slotLock) Renew(ctx context.Context, _ *lock.Held) error {
	return l.whileOurs(ctx, false, func(unwritten error) error {
		if unwritten == nil {
			m := l.meta
			m.RenewedAt = time.Now()
			if unwritten = writeMeta(l.metaPath, m); unwritten == nil {
				l.meta = m
			} else if err := touch(l.metaPath, m.RenewedAt); err != nil {
				unwritten = fmt.Errorf("%w (touching it failed too: status shows the lock overdue, though it is held)", unwritten)
			}
		}
		l.warn(unwritten)
		return nil
	})
}

// warn logs a renewal's unwritten record once per streak of failures.
func (l *slotLock) warn(unwritten error) {
	switch {
	case unwritten != nil && !l.failing:
		l.log.Warn("cannot write the lock record; keeping the lock, which the kernel holds while distlock runs (a break is still seen)", "key", l.meta.Key, "error", unwritten)
	case unwritten == nil && l.failing:
		l.log.Info("lock record written again", "key", l.meta.Key)
	}
	l.failing = unwritten != nil
}

// Release implements lock.LeaseStore. The flocks are always let go (they are
// ours by the kernel's word); ErrNotHeld says the lock had been broken
// meanwhile. A record that cannot be removed (a read-only lock directory)
// is left behind with a warning: the lock is free all the same, and a
// record whose flock is free names no holder.
func (l *slotLock) Release(ctx context.Context, _ *lock.Held) error {
	return l.whileOurs(ctx, true, func(error) error {
		if err := os.Remove(l.metaPath); err != nil {
			l.log.Warn("released the lock, but cannot remove its record (it names no holder now)", "key", l.meta.Key, "error", err)
		}
		return nil
	})
}

// whileOurs runs change with l.mu held, when l still holds its flocks and
// its record names it (else lock.ErrNotHeld: a break removed the record),
// under the key's record lock; recErr is why that could not be taken
// (stuck, or its file cannot be made). end (Release, Hold) lets the flocks
// go after change, whatever the answer, still under the record lock: one
// who holds it sees the record and the flocks agree. Break's and status's
// scan (holders.go, slots.go) does not take it: a slot released between
// its flock probe and its record read looks, for that instant, like a
// holder broken but not let go yet (a holder unknown; a break removes
// nothing). What keeps a break off the next holder's record is its
// compare-and-delete under the record lock (removeRecord). A record lock
// that cannot be taken does not keep the flocks. A renewal (not end)
// gives up when ctx ends while it waits for the record lock.
func (l *slotLock) whileOurs(ctx context.Context, end bool, change func(recErr error) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		return lock.ErrNotHeld
	}
	f, recErr := lockRecord(ctx, l.recLock)
	switch {
	case recErr == nil:
		defer unlockClose(f)
	case !end && ctx.Err() != nil:
		return recErr
	}
	if end {
		defer l.letGo()
	}
	switch ours, err := namesHolder(l.metaPath, l.meta.Owner, l.meta.Token); {
	case err != nil:
		return err
	case !ours:
		return lock.ErrNotHeld
	}
	return change(recErr)
}

// Hold implements lock.LeaseStore. A flock dies with its process, so a hold
// is recorded in the lease's record instead (mode and RenewedAt+d), and the
// flocks are let go: acquirers of every limit, Inspect and status honour an
// unexpired hold. The record is written before the flocks go, so none of
// them sees the slot free in between.
func (l *slotLock) Hold(ctx context.Context, _ *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	ttl := time.Duration(max(d.Milliseconds(), 1)) * time.Millisecond
	err := l.whileOurs(ctx, true, func(error) error {
		m := l.meta
		m.Hold, m.RenewedAt, m.TTLms = mode, time.Now(), ttl.Milliseconds()
		err := writeMeta(l.metaPath, m)
		if err == nil {
			l.meta = m
		}
		return err
	})
	return ttl, err
}

// resumeWait bounds how long Resume waits out another process's brief
// flock of the key (a try-once or status probing it).
const resumeWait = 100 * time.Millisecond

// Resume implements lock.Backend for a mutex's hold: the record must name
// h's owner and token, with its hold unexpired. The returned lease holds
// the flock until it is held again or released.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	p := b.keyPaths(h.Key)
	granted := time.Now()
	// A key with no lock file has no hold to resume; none is made for it.
	f, err := lockBrief(ctx, p.lock(), 0, resumeWait, 2*time.Millisecond, 2*time.Millisecond)
	if errors.Is(err, errStuck) || errors.Is(err, os.ErrNotExist) {
		return nil, lock.ErrNotHeld // held by a live run, or never: not a hold of ours
	}
	if err != nil {
		return nil, err
	}
	m, ok, err := readMeta(p.record())
	if err != nil || !ok || m.Owner != h.Owner || m.Token != h.Token || !m.heldWithoutProcess(time.Now()) {
		unlockClose(f)
		return nil, cmp.Or(err, lock.ErrNotHeld)
	}
	return b.newLease([]*os.File{f}, m, p.record(), granted), nil
}
