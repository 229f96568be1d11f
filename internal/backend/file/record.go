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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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

// namesHolder reports whether the record at path names the holder with
// owner and token.
func namesHolder(path, owner string, token uint64) (bool, error) {
	m, ok, err := readMeta(path)
	return ok && m.Owner == owner && m.Token == token, err
}

// removeRecord is Break's record work: it removes s's record, under the
// key's record lock, when it still names s's holder with its token; removed
// is false when it does not (the holder let go meanwhile). A slot seen
// without a record is broken already: removed, with nothing to remove.
func (b *Backend) removeRecord(ctx context.Context, key string, s slotHolder) (removed bool, err error) {
	if !s.ok {
		return true, nil
	}
	err = withRecordLock(ctx, b.keyPaths(key).recLock(), func() error {
		ours, err := namesHolder(s.path, s.m.Owner, s.m.Token)
		if err != nil || !ours {
			return err
		}
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		removed = true
		return nil
	})
	return removed, err
}

// meta is a holder's record (sidecar), of a mutex and of a semaphore slot
// alike; written atomically by rename.
type meta struct {
	Key        string    `json:"key"`
	Owner      string    `json:"owner"`
	Token      uint64    `json:"token"`
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	User       string    `json:"user"`
	Command    string    `json:"command"`
	Note       string    `json:"note"`
	AcquiredAt time.Time `json:"acquired_at"`
	RenewedAt  time.Time `json:"renewed_at"`
	TTLms      int64     `json:"ttl_ms"`
	// Hold is set when no process holds the flock any more and the lock is
	// kept until RenewedAt+TTL (lock.HoldMinHold, lock.HoldHandle).
	Hold string `json:"hold,omitempty"`
	// Limit and Slot are a semaphore holder's (slots.go): the --limit it
	// asked for, which every holder must agree on, and its slot. A mutex is
	// slot 0 of 1 and records neither, as every distlock version writes it.
	Limit int `json:"limit,omitempty"`
	Slot  int `json:"slot,omitempty"`

	// touched is the record's modification time, as read. A renewal that
	// cannot rewrite the record (a full lock directory) touches it instead
	// (record.go), so the later of the two is the last renewal seen.
	touched time.Time
}

// heldWithoutProcess reports whether m is a hold (min-hold, handle) that
// has not expired yet.
func (m meta) heldWithoutProcess(now time.Time) bool {
	return m.Hold != "" && now.Before(m.RenewedAt.Add(time.Duration(m.TTLms)*time.Millisecond))
}

func (m meta) holder(now time.Time) lock.Holder {
	ttl := time.Duration(m.TTLms) * time.Millisecond
	renewed := m.RenewedAt
	if m.Hold == "" && m.touched.After(renewed) {
		renewed = m.touched // a hold is never renewed: it ends at RenewedAt+TTL
	}
	return lock.Holder{
		Key:        m.Key,
		Owner:      m.Owner,
		Token:      m.Token,
		Meta:       lock.Meta{Host: m.Host, PID: m.PID, User: m.User, Command: m.Command, Note: m.Note},
		AcquiredAt: m.AcquiredAt,
		TTL:        ttl,
		ExpiresIn:  max(0, renewed.Add(ttl).Sub(now)),
		Hold:       m.Hold,
	}
}

// readMeta reads the record at path and its modification time; ok is false
// when there is none, or it is torn or foreign (no holder named).
func readMeta(path string) (m meta, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return m, false, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return m, false, err
	}
	if json.Unmarshal(b, &m) != nil {
		return meta{}, false, nil
	}
	m.touched = st.ModTime()
	return m, true, nil
}

// writeMeta writes m to path by a rename: a reader sees the old record or
// the new one. Records are not fsync'd: a crash ends their holders too.
func writeMeta(path string, m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
