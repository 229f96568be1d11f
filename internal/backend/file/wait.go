package file

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// contender is a mutex contender on the file engine. Its first Try is a
// try-once. A waiter then blocks in flock(2) on its own descriptor of the
// lock file, so the kernel wakes it the moment the holder lets go or dies,
// as flock(1) waits; its next Try takes the lock on that descriptor. A lock
// kept by a hold (min-hold, handle) has no flock to wait on: the waiter
// polls until the hold runs out.
type contender struct {
	b       *Backend
	req     lock.Request
	last    lock.Holder // from the last busy answer
	blocked *blockedFlock
}

// Try implements lock.Contender.
func (c *contender) Try(ctx context.Context) (lock.Lease, error) {
	var (
		l   lock.Lease
		err error
	)
	if f, granted, done := c.blocked.take(); done {
		// The blocked flock returned: granted (f != nil), or failed.
		c.blocked = nil
		if f != nil {
			l, err = c.b.take(ctx, f, c.req, granted)
		} else {
			l, err = c.b.tryOnce(ctx, c.req)
		}
	} else {
		l, err = c.b.tryOnce(ctx, c.req)
	}
	if err == nil {
		c.blocked.abandon() // the lock came by another try: nothing to wait for
		c.blocked = nil
	}
	var busy *lock.BusyError
	if errors.As(err, &busy) {
		c.last = busy.Holder
	}
	return l, err
}

// Wait implements lock.Contender.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
	if c.last.Hold != "" {
		return lock.Retry{After: lock.ExpiryBound(c.last.ExpiresIn), Poll: pollCap}, nil
	}
	if c.blocked == nil {
		lockPath, _, _ := c.b.paths(c.req.Key)
		f, err := c.b.openLockFile(lockPath)
		if err != nil {
			return lock.Retry{}, err
		}
		c.blocked = blockFlock(f)
	}
	return lock.Retry{Wake: c.blocked.done, After: lock.NoBound}, nil
}

// Leave implements lock.Contender.
func (c *contender) Leave() {
	c.blocked.abandon()
	c.blocked = nil
}

// blockedFlock is a flock(LOCK_EX) blocked in the kernel on its own
// goroutine. flock(2) cannot be cancelled: a waiter that gives up abandons
// it, and if it is granted afterwards it is let go at once.
type blockedFlock struct {
	done chan struct{} // closed when flock returned

	mu        sync.Mutex
	f         *os.File
	err       error
	granted   time.Time
	abandoned bool
	taken     bool
}

func blockFlock(f *os.File) *blockedFlock {
	bf := &blockedFlock{f: f, done: make(chan struct{})}
	go func() {
		err := flock(f, syscall.LOCK_EX)
		bf.mu.Lock()
		defer bf.mu.Unlock()
		bf.err, bf.granted = err, time.Now()
		close(bf.done)
		if bf.abandoned || err != nil {
			bf.release()
		}
	}()
	return bf
}

// take reports whether flock has returned, and if it was granted hands
// over the descriptor (which the caller now owns) with the time it was.
func (bf *blockedFlock) take() (f *os.File, granted time.Time, done bool) {
	if bf == nil {
		return nil, time.Time{}, false
	}
	select {
	case <-bf.done:
	default:
		return nil, time.Time{}, false
	}
	bf.mu.Lock()
	defer bf.mu.Unlock()
	if bf.err != nil || bf.abandoned || bf.taken {
		return nil, time.Time{}, true
	}
	bf.taken = true
	return bf.f, bf.granted, true
}

// abandon gives the blocked flock up: let go of it now if it was granted,
// or as soon as it is.
func (bf *blockedFlock) abandon() {
	if bf == nil {
		return
	}
	bf.mu.Lock()
	defer bf.mu.Unlock()
	if bf.abandoned || bf.taken {
		return
	}
	bf.abandoned = true
	select {
	case <-bf.done:
		if bf.err == nil {
			bf.release()
		}
	default: // the goroutine lets go when flock returns
	}
}

// release unlocks and closes the descriptor; bf.mu is held.
func (bf *blockedFlock) release() {
	if bf.f != nil {
		syscall.Flock(int(bf.f.Fd()), syscall.LOCK_UN)
		bf.f.Close()
		bf.f = nil
	}
}
