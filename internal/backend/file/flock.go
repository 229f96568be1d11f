package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// openLock opens a lock file for flock: to hold, creating it when create
// is set, else only to probe it (read-only). An error is a
// *lock.UnavailableError wrapping the open's.
func openLock(path string, create bool) (*os.File, error) {
	flags := os.O_RDONLY
	if create {
		flags = os.O_RDWR | os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, unavailable("open lock file "+path, err)
	}
	return f, nil
}

// lockBrief takes the flock at path (the record lock, the short flock) for
// a step of a few file operations, polling (pollFlock).
// The file is opened read-only (a flock needs no write access), so that a
// lock directory that has become read-only still lets renewals check their
// record. Errors are *lock.UnavailableError, except the context's own.
func lockBrief(ctx context.Context, path string, wait, delay, most time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err == nil {
		err = pollFlock(ctx, f, wait, delay, most)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot lock %s: %v", path, err), Err: err}
	}
	return f, nil
}

// errStuck: a short-held flock (a key's record lock or semaphore lock)
// stayed taken for as long as its wait allows.
var errStuck = errors.New("a distlock process holding it is stuck (stopped?)")

// pollFlock takes the exclusive flock on f for a step that holds it for a
// few file operations only: it tries without blocking in the kernel (a
// blocked flock cannot be cancelled), after delays doubling up to most,
// until ctx is done or wait has passed (errStuck). On error it closes f.
func pollFlock(ctx context.Context, f *os.File, wait, delay, most time.Duration) error {
	deadline := time.Now().Add(wait)
	for ; ; delay = min(2*delay, most) {
		taken, err := tryFlock(f, syscall.LOCK_EX)
		switch {
		case taken:
			return nil
		case err != nil:
			f.Close()
			return err
		case time.Now().After(deadline):
			f.Close()
			return fmt.Errorf("%s stayed locked for %s: %w", f.Name(), wait, errStuck)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// tryFlock takes a flock (how: syscall.LOCK_EX or LOCK_SH) on f without
// waiting; taken is false when another open file holds it.
func tryFlock(f *os.File, how int) (taken bool, err error) {
	err = flock(f, how|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	}
	return false, fmt.Errorf("flock %s: %w", f.Name(), err)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockClose(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
