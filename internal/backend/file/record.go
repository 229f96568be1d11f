package file

// The record lock: every read-check-write of a key's records (a break's
// compare-and-delete, a renewal's check and rewrite, a release, a hold, an
// acquisition's first write) holds the key's "<base>#rec.lock" (flock
// LOCK_EX) from its read to its write. Interleaved, a break that inspected
// one holder would remove the next one's record, or a renewal that read
// the record before a break would write it back after. It is held for
// microseconds, never while waiting for anything else, and always
// innermost (under a key's flock or short flock, or none).

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// recordLockWait bounds the wait for a key's record lock. Its holders keep
// it for microseconds: waiting this long means one of them is stopped.
const recordLockWait = time.Second

// lockRecord takes the key's record lock at path.
func lockRecord(ctx context.Context, path string) (*os.File, error) {
	return lockBrief(ctx, path, os.O_CREATE, recordLockWait, 20*time.Microsecond, 5*time.Millisecond)
}

// withRecordLock runs fn under the record lock at path.
func withRecordLock(ctx context.Context, path string, fn func() error) error {
	f, err := lockRecord(ctx, path)
	if err != nil {
		return err
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
// is false when it does not (the holder let go meanwhile). A mutex seen
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

// meta is a holder's record, of a mutex and of a semaphore slot alike;
// written atomically by rename. Its fields are read by name, by every
// distlock version: the key, lock.Record's (owner, who, since when, TTL),
// the token and the last renewal.
type meta struct {
	Key string `json:"key"`
	lock.Record
	Token     uint64    `json:"token"`
	RenewedAt time.Time `json:"renewed_at"`
	// Hold is set when no process holds the flock any more and the lock is
	// kept until RenewedAt+TTL (lock.HoldMinHold, lock.HoldHandle).
	Hold string `json:"hold,omitempty"`
	// Limit and Slot are a semaphore holder's (slots.go): the --limit it
	// asked for, which every holder must agree on, and its slot. A mutex is
	// slot 0 of 1 and records neither, as every distlock version writes it.
	Limit int `json:"limit,omitempty"`
	Slot  int `json:"slot,omitempty"`
	// ProcID names the holder process PID for as long as the machine runs
	// (procID): a break pokes that process only when it is still the one
	// (poke.go). Records of older versions have none: no poke.
	ProcID string `json:"proc_id,omitempty"`

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
	h := m.Record.Holder(m.Key)
	renewed := m.RenewedAt
	if m.Hold == "" && m.touched.After(renewed) {
		renewed = m.touched // a hold is never renewed: it ends at RenewedAt+TTL
	}
	h.Token, h.Hold, h.ExpiresIn = m.Token, m.Hold, max(0, renewed.Add(h.TTL).Sub(now))
	return h
}

// readMeta reads the record at path and its modification time; ok is false
// when there is none, or it is torn or foreign (no holder named).
func readMeta(path string) (m meta, ok bool, err error) {
	b, touched, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil || json.Unmarshal(b, &m) != nil {
		return meta{}, false, err
	}
	m.touched = touched
	return m, true, nil
}

// writeMeta writes m to path by a rename: a reader sees the old record or
// the new one. Records are not fsync'd: a crash ends their holders too.
func writeMeta(path string, m meta) error {
	b, _ := json.Marshal(m) // plain fields: cannot fail
	return writeRenamed(path, tmpName(path), b)
}

// writeRenamed writes data to tmp, a new file (createExcl), and renames it
// over path: a reader sees the old file or the new one, never a part.
func writeRenamed(path, tmp string, data []byte) error {
	f, err := createExcl(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
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
