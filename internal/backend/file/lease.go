package file

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Lease is a held flock plus the sidecar that names us.
type Lease struct {
	mu       sync.Mutex
	f        *os.File
	meta     meta
	metaPath string
	granted  time.Time
	recLock  string // the key's record lock (record.go)
	log      *slog.Logger
	warned   recordWarner
}

func (l *Lease) Key() string        { return l.meta.Key }
func (l *Lease) Token() uint64      { return l.meta.Token }
func (l *Lease) Owner() string      { return l.meta.Owner }
func (l *Lease) Granted() time.Time { return l.granted }

// LockFiles implements lock.FileLocked: the flock'd lock file.
func (l *Lease) LockFiles() []*os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return []*os.File{l.f}
}

// Alerts implements lock.Lease: a local break pokes the holding process
// instead (poke.go), which the runner turns into a renewal at once.
func (l *Lease) Alerts() <-chan struct{} { return nil }

// record names the sidecar that names us.
func (l *Lease) record() ownRecord {
	return ownRecord{key: l.meta.Key, owner: l.meta.Owner, token: l.meta.Token, path: l.metaPath, lockPath: l.recLock}
}

// letGo drops the flock. Call it with l.mu held.
func (l *Lease) letGo() {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	touchReleased(l.f) // wakes the waiters (wake_linux.go)
	l.f.Close()
	l.f = nil
}

// Renew implements lock.Lease: the flock cannot expire, so renewing checks
// (under the key's record lock) that the lock was not broken and records
// the renewal for status. A record that cannot be written (a full or
// read-only lock directory) does not cost the lock: Renew warns once per
// streak of such failures and succeeds; only a break (the sidecar gone or
// naming someone else) is lock.ErrNotHeld.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
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
		l.meta.RenewedAt = m.RenewedAt // this field only: Key() and Token() read the others unlocked
	}
	return nil
}

// Release implements lock.Lease. The flock is always let go (it is ours by
// the kernel's word); ErrNotHeld says the lock had been broken meanwhile.
// A sidecar that cannot be removed (a read-only lock directory) is left
// behind with a warning: the lock is free all the same, and a sidecar
// whose flock is free names no holder.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	var rmErr error
	ours, err := l.record().release(ctx, func() error {
		rmErr = os.Remove(l.metaPath)
		return nil
	}, l.letGo)
	if rmErr != nil {
		l.log.Warn("released the lock, but cannot remove its record (it names no holder now)", "key", l.meta.Key, "error", rmErr)
	}
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	return nil
}
