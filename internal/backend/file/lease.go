package file

import (
	"context"
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

// stillOurs reports whether the sidecar still names us (a break removes it).
func (l *Lease) stillOurs() (bool, error) {
	m, ok, err := readMeta(l.metaPath)
	if err != nil {
		return false, err
	}
	return ok && m.Owner == l.meta.Owner && m.Token == l.meta.Token, nil
}

// Renew implements lock.Lease: the flock cannot expire, so renewing checks
// that the lock was not broken and records the renewal for status.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	ours, err := l.stillOurs()
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	l.meta.RenewedAt = time.Now()
	return writeMeta(l.metaPath, l.meta)
}

// Release implements lock.Lease. The flock is always let go (it is ours by
// the kernel's word); ErrNotHeld says the lock had been broken meanwhile.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	ours, err := l.stillOurs()
	if ours {
		err = os.Remove(l.metaPath)
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	return nil
}
