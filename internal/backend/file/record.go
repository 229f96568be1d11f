package file

// The record lock: every read-check-write of a key's records.
//
// A holder's record (the sidecar "<base>.json" of a mutex, or
// "<base>#slot<i>.json" of a semaphore slot, paths.go) names it. Break
// removes it; renewals, releases, holds and acquisitions check it and
// write or remove it. Each of these is a read, a comparison and a write,
// and two of them interleaved go wrong: a break that inspected one holder
// removes the record of the next, or a renewal that read the record before
// a break writes it back after. So every writer and remover of a key's
// records holds "<base>#rec.lock" (flock LOCK_EX) from its read to its
// write: a break is a compare-and-delete, and a renewal after a break
// sees it.
//
// The record lock is held for a read and a small write (microseconds),
// never while waiting for anything else, and it is always the innermost
// lock (taken under a key's flock or its semaphore lock, or under none,
// never the other way round). Waiting for it polls, bounded by the caller's context and by
// recordLockWait.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// recordLockWait bounds the wait for a key's record lock. Its holders keep
// it for microseconds: waiting this long means one of them is stopped.
const recordLockWait = time.Second

// lockRecord takes the record lock at path. The file is opened read-only
// (a flock needs no write access) so that a lock directory that has become
// read-only still lets renewals check their record.
func lockRecord(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pollFlock(ctx, f, recordLockWait, 20*time.Microsecond, 5*time.Millisecond); err != nil {
		return nil, err
	}
	return f, nil
}

// withRecordLock runs fn under the record lock at path. Errors taking the
// lock are *lock.UnavailableError, except the context's own.
func withRecordLock(ctx context.Context, path string, fn func() error) error {
	f, err := lockRecord(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &lock.UnavailableError{Msg: fmt.Sprintf("cannot lock %s: %v", path, err), Err: err}
	}
	defer unlockClose(f)
	return fn()
}

// ownRecord names one holder's record: the sidecar at path naming owner
// with token, and the key's record lock.
type ownRecord struct {
	key, owner string
	token      uint64
	path       string // the sidecar
	lockPath   string // the key's record lock
}

// names reports whether the record at r.path names r's holder.
func (r ownRecord) names() (bool, error) {
	m, ok, err := readMeta(r.path)
	if err != nil {
		return false, err
	}
	return ok && m.Owner == r.owner && m.Token == r.token, nil
}

// renew is Renew's record work: under the record lock, the record must
// still name us (a break removes it: lock.ErrNotHeld), and write rewrites
// it. The flock is the lock and cannot expire, so a record that names us
// but cannot be rewritten (a full or read-only lock directory) does not
// cost the lock: renew then touches the record (its mtime keeps status
// honest when the file system allows that much) and returns the write's
// error as unwritten with err nil. The caller warns.
//
// A record lock that cannot be taken (stuck, or its file cannot be made)
// leaves renew a plain read: ours or not, nothing written.
func (r ownRecord) renew(ctx context.Context, write func() error) (unwritten, err error) {
	f, lerr := lockRecord(ctx, r.lockPath)
	if lerr != nil {
		if ctx.Err() != nil {
			return nil, lerr
		}
		ours, err := r.names()
		if err != nil {
			return nil, err
		}
		if !ours {
			return nil, lock.ErrNotHeld
		}
		return fmt.Errorf("cannot lock the record: %w", lerr), nil
	}
	defer unlockClose(f)
	ours, err := r.names()
	if err != nil {
		return nil, err
	}
	if !ours {
		return nil, lock.ErrNotHeld
	}
	if werr := write(); werr != nil {
		now := time.Now()
		if terr := os.Chtimes(r.path, now, now); terr != nil {
			return fmt.Errorf("%w (touching it failed too: status shows the lock overdue, though it is held)", werr), nil
		}
		return werr, nil
	}
	return nil, nil
}

// release is Release's and Hold's record work: under the record lock, when
// the record still names us, change (remove it, or write a hold) runs; then
// letGo lets go of the flock, still under the record lock, so that a break
// never sees the flock held by a holder whose record is already gone. A
// record lock that cannot be taken does not keep the flock: letGo always
// runs.
func (r ownRecord) release(ctx context.Context, change func() error, letGo func()) (ours bool, err error) {
	f, lerr := lockRecord(ctx, r.lockPath)
	if lerr == nil {
		defer unlockClose(f)
	}
	defer letGo()
	ours, err = r.names()
	if err != nil || !ours {
		return ours, err
	}
	return true, change()
}

// write is an acquisition's record work: the first record of a new holder,
// written under the record lock, so that a break comparing an older
// holder's token never removes it.
func (r ownRecord) write(ctx context.Context, write func() error) error {
	return withRecordLock(ctx, r.lockPath, write)
}

// recordWarner logs a renewal's unwritten record once per streak.
type recordWarner struct {
	failing bool
}

func (w *recordWarner) note(log *slog.Logger, key string, unwritten error) {
	switch {
	case unwritten != nil && !w.failing:
		log.Warn("cannot write the lock record; keeping the lock, which the kernel holds while distlock runs (a break is still seen)", "key", key, "error", unwritten)
	case unwritten == nil && w.failing:
		log.Info("lock record written again", "key", key)
	}
	w.failing = unwritten != nil
}
