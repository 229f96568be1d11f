package file

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Hold implements lock.LeaseStore. A flock dies with its process, so a hold is
// recorded in the lease's record instead (mode and RenewedAt+d), and the
// flocks are let go: acquirers of every limit, Inspect and status honour
// an unexpired hold. The record is written before the flocks go, so none
// of them sees the lock free in between. The handle then names the hold's
// length.
func (l *slotLock) Hold(ctx context.Context, _ *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	ttl := time.Duration(max(d.Milliseconds(), 1)) * time.Millisecond
	err := l.letGoIfOurs(ctx, func() error {
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

// resumeTries bounds how long Resume waits out another process's brief
// flock (a a try-once or status probing the key).
const resumeTries = 50

// Resume implements lock.Backend for a mutex's hold: the record must name
// h's owner and token, with its hold unexpired. The returned lease holds
// the flock until it is held again or released.
func (b *Backend) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	lockPath, recordPath := b.keyPaths(h.Key).slot(1, 0)
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, lock.ErrNotHeld
	}
	if err != nil {
		return nil, err
	}
	granted := time.Now()
	for i := 0; ; i++ {
		taken, err := tryFlock(f, syscall.LOCK_EX)
		if taken {
			break
		}
		if err != nil || i == resumeTries {
			// Held by a live run: not a hold of ours.
			f.Close()
			return nil, lock.ErrNotHeld
		}
		time.Sleep(2 * time.Millisecond)
	}
	m, ok, err := readMeta(recordPath)
	if err != nil || !ok || m.Owner != h.Owner || m.Token != h.Token || !m.heldWithoutProcess(time.Now()) {
		unlockClose(f)
		if err != nil {
			return nil, err
		}
		return nil, lock.ErrNotHeld
	}
	l, _ := b.newLease([]*os.File{f}, m, recordPath, granted)
	return l, nil
}
