package file

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

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
	// Limit and Slot are a semaphore holder's (semaphore.go): the --limit it
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

func readMeta(path string) (meta, bool, error) {
	var m meta
	b, touched, err := readRecord(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return meta{}, false, nil // a torn or foreign file: treat as no holder metadata
	}
	m.touched = touched
	return m, true, nil
}

// readRecord reads a record and its modification time.
func readRecord(path string) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	b, err := io.ReadAll(f)
	return b, st.ModTime(), err
}

func writeMeta(path string, m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeAtomic(path, b, false)
}

// writeAtomic writes b to path by a rename, optionally fsyncing the data
// and the directory so the write survives a crash.
func writeAtomic(path string, b []byte, durable bool) error {
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if durable {
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			err = d.Sync()
			d.Close()
			return err
		}
	}
	return nil
}
