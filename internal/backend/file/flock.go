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
	f, err := openFile(path, flags, 0o600)
	if err != nil {
		return nil, unavailable("open lock file "+path, err)
	}
	return f, nil
}

// errStuck: a short-held flock (a key's record lock or semaphore lock)
// stayed taken for as long as its wait allows.
var errStuck = errors.New("a distlock process holding it is stuck (stopped?)")

// lockBrief takes the exclusive flock at path (the record lock, the short
// flock, or a mutex's for Resume) for a step that holds it for a few file
// operations only: it tries without blocking in the kernel (a blocked
// flock cannot be cancelled), after delays doubling up to most, until ctx
// is done or wait has passed (errStuck). The file is opened read-only (a
// flock needs no write access), so that a lock directory that has become
// read-only still lets renewals check their record; create is os.O_CREATE
// to make a missing file, else 0. Errors are *lock.UnavailableError,
// except the context's own.
func lockBrief(ctx context.Context, path string, create int, wait, delay, most time.Duration) (*os.File, error) {
	f, err := openFile(path, os.O_RDONLY|create, 0o600)
	deadline := time.Now().Add(wait)
	for ; err == nil; delay = min(2*delay, most) {
		var taken bool
		if taken, err = tryFlock(f, syscall.LOCK_EX); taken {
			return f, nil
		}
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("%s stayed locked for %s: %w", path, wait, errStuck)
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			err = ctx.Err()
		case <-t.C:
		}
	}
	if f != nil {
		f.Close()
	}
	if ctx.Err() != nil {
		return nil, err
	}
	return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot lock %s: %v", path, err), Err: err}
}

// tryFlock takes a flock (how: syscall.LOCK_EX or LOCK_SH) on f without
// waiting; taken is false when another open file holds it. A flock that
// does not wait is never interrupted (EINTR), and Go's signal handlers
// restart system calls (SA_RESTART) in any case.
func tryFlock(f *os.File, how int) (taken bool, err error) {
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	}
	return false, fmt.Errorf("flock %s: %w", f.Name(), err)
}

func unlockClose(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
