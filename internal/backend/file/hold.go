package file

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.Lease. A flock dies with its process, so a hold
// is recorded in the sidecar instead (mode and RenewedAt+d), and the flock
// is let go: a try-once and Inspect honour an unexpired hold.
func (l *Lease) Hold(ctx context.Context, d time.Duration, mode string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	ours, err := l.record().release(ctx, func() error {
		m := l.meta
		m.Hold, m.RenewedAt, m.TTLms = mode, time.Now(), max(d.Milliseconds(), 1)
		err := writeMeta(l.metaPath, m)
		if err == nil {
			l.meta = m
		}
		return err
	}, l.letGo)
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	return nil
}

// Handle implements lock.Lease.
func (l *Lease) Handle() lock.Handle {
	return lock.Handle{Key: l.meta.Key, Owner: l.meta.Owner, Token: l.meta.Token, TTLms: l.meta.TTLms}
}

// resumeTries bounds how long Resume waits out another process's brief
// flock (a a try-once or status probing the key).
const resumeTries = 50

// Resume implements lock.Backend: the sidecar must name h's owner and
// token, with its hold unexpired. The returned lease holds the flock until
// it is held again or released.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	lockPath, metaPath, _ := b.paths(h.Key)
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, lock.ErrNotHeld
	}
	if err != nil {
		return nil, err
	}
	granted := time.Now()
	for i := 0; ; i++ {
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || i == resumeTries {
			// Held by a live run: not a hold of ours.
			f.Close()
			return nil, lock.ErrNotHeld
		}
		time.Sleep(2 * time.Millisecond)
	}
	m, ok, err := readMeta(metaPath)
	if err != nil || !ok || m.Owner != h.Owner || m.Token != h.Token || !m.heldWithoutProcess(time.Now()) {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, lock.ErrNotHeld
	}
	return b.newLease(f, m, metaPath, granted), nil
}
