// Package file is the zero-setup engine: flock(2) on a per-key file in a
// local directory. The kernel drops the lock when the holder dies, so a
// lease cannot outlive its process; the TTL only drives renewal (which
// checks that the sidecar still names us) and what status shows. Every
// read-check-write of a sidecar holds the key's record lock (record.go).
package file

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Backend is a directory of lock files.
type Backend struct {
	dir    string
	prefix string
	host   string
	log    *slog.Logger // warnings of the leases it grants
	// dirErr is why the directory could not be created (OpenForDoctor
	// only): Doctor reports it as its writable check.
	dirErr error
}

// Open uses dir ("" = DefaultDir()), creating it with mode 0700.
func Open(dir, prefix string) (*Backend, error) {
	if dir == "" {
		dir = DefaultDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot create lock directory %s: %v", dir, errors.Unwrap(err)), Err: err}
	}
	host, _ := os.Hostname()
	return &Backend{dir: dir, prefix: prefix, host: host, log: slog.Default()}, nil
}

// OpenForDoctor is Open for distlock doctor: a directory that cannot be
// created is a failed check to report, not a reason to stop, so it returns
// the backend all the same (its locks then fail as Open would have).
func OpenForDoctor(dir, prefix string) *Backend {
	b, err := Open(dir, prefix)
	if err != nil {
		if dir == "" {
			dir = DefaultDir()
		}
		host, _ := os.Hostname()
		return &Backend{dir: dir, prefix: prefix, host: host, log: slog.Default(), dirErr: err}
	}
	return b
}

// SetLogger sets where the leases granted from now on log their warnings
// (a renewal that cannot write its record). The default is slog.Default().
func (b *Backend) SetLogger(log *slog.Logger) {
	if log != nil {
		b.log = log
	}
}

// Dir is the directory holding the locks.
func (b *Backend) Dir() string { return b.dir }

func (b *Backend) paths(key string) (lockPath, metaPath, tokenPath string) {
	base := filepath.Join(b.dir, baseName(b.prefix, key))
	return base + ".lock", base + ".json", base + ".token"
}

// recordLock is the key's record lock (record.go), shared by the mutex
// sidecar and every slot sidecar of the key. '#' keeps it apart from any
// key's own files (baseName escapes '#').
func (b *Backend) recordLock(key string) string {
	return filepath.Join(b.dir, baseName(b.prefix, key)) + "#rec.lock"
}

// Guarantee is what the file engine promises, in one line (status's
// engine: line; internal/backend's registry shows it too).
const Guarantee = "file: exclusive among processes sharing this directory on one machine; the kernel frees the lock when its holder dies"

// Guarantee implements lock.Backend.
func (b *Backend) Guarantee() string { return Guarantee }

// Close implements lock.Backend.
func (b *Backend) Close() error { return nil }

// pollCap caps a waiter's backoff: a poll of a local file is cheap.
const pollCap = 200 * time.Millisecond

// Contend implements lock.Backend: the file engine keeps no line, so
// waiters poll (see lock.Polling); a mutex's waiters are also woken by
// the kernel when the holder lets go (wake_linux.go).
func (b *Backend) Contend(req lock.Request) lock.Contender {
	p := &lock.Polling{Cap: pollCap, TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) {
		l, err := b.tryOnce(ctx, req)
		return l, lock.HolderExpiry(err), err
	}}
	if req.Limit <= 1 {
		lockPath, _, _ := b.paths(req.Key)
		p.Wake = func(ctx context.Context) (<-chan struct{}, func(), error) { return watchReleases(ctx, lockPath) }
	}
	return p
}

// tryOnce makes one attempt at req.
func (b *Backend) tryOnce(ctx context.Context, req lock.Request) (lock.Lease, error) {
	if req.Limit > 1 {
		return b.trySemaphore(ctx, req)
	}
	lockPath, metaPath, tokenPath := b.paths(req.Key)
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot open lock file %s: %v", lockPath, errors.Unwrap(err)), Err: err}
	}
	granted := time.Now()
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := b.heldBy(req.Key, metaPath)
			if h.Token == 0 { // no mutex holder on record: semaphore slots may share the file
				if have, ok := b.slotLimit(ctx, req.Key); ok {
					return nil, &lock.LimitMismatchError{Key: req.Key, Want: 1, Have: have}
				}
			}
			return nil, &lock.BusyError{Holder: h}
		}
		return nil, fmt.Errorf("flock %s: %w", lockPath, err)
	}
	if m, ok, _ := readMeta(metaPath); ok && m.Key == req.Key && m.heldWithoutProcess(time.Now()) {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		return nil, &lock.BusyError{Holder: m.holder(time.Now())}
	}
	// A semaphore slot kept by a hold holds no shared flock on lockPath.
	if _, ok := b.heldSlot(req.Key); ok {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		have, _ := b.slotLimit(ctx, req.Key)
		return nil, &lock.LimitMismatchError{Key: req.Key, Want: 1, Have: max(have, 2)}
	}
	l, err := b.initLease(ctx, f, req, metaPath, tokenPath, granted)
	if err != nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		return nil, err
	}
	return l, nil
}

func (b *Backend) initLease(ctx context.Context, f *os.File, req lock.Request, metaPath, tokenPath string, granted time.Time) (*Lease, error) {
	now := time.Now()
	tok, err := nextToken(tokenPath, now) // fsync'd: before the record lock, not under it
	if err != nil {
		return nil, fmt.Errorf("fencing counter for %s: %w", req.Key, err)
	}
	m := meta{
		Key: req.Key, Owner: req.Owner, Token: tok,
		Host: req.Meta.Host, PID: req.Meta.PID, User: req.Meta.User, Command: req.Meta.Command, Note: req.Meta.Note,
		AcquiredAt: now, RenewedAt: now, TTLms: req.TTL.Milliseconds(),
	}
	l := b.newLease(f, m, metaPath, granted)
	if err := l.record().write(ctx, func() error { return writeMeta(metaPath, m) }); err != nil {
		return nil, fmt.Errorf("holder metadata for %s: %w", req.Key, err)
	}
	return l, nil
}

func (b *Backend) newLease(f *os.File, m meta, metaPath string, granted time.Time) *Lease {
	return &Lease{f: f, meta: m, metaPath: metaPath, granted: granted, recLock: b.recordLock(m.Key), log: b.log}
}

// heldBy describes the holder of a key whose flock we could not take.
func (b *Backend) heldBy(key, metaPath string) lock.Holder {
	m, ok, _ := readMeta(metaPath)
	if !ok || m.Key != key {
		return lock.Holder{Key: key, ExpiresIn: -1}
	}
	return m.holder(time.Now())
}

// Inspect implements lock.Backend.
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	if h, held, err := b.inspectSlots(ctx, key); held || err != nil {
		return h, held, err // a semaphore (semaphore.go)
	}
	return b.inspectMutex(key)
}

// inspectMutex is Inspect for a mutex: held while a process holds the
// flock, or while the sidecar records an unexpired hold.
func (b *Backend) inspectMutex(key string) (lock.Holder, bool, error) {
	lockPath, metaPath, _ := b.paths(key)
	held, err := isLocked(lockPath)
	if err != nil {
		return lock.Holder{}, false, err
	}
	if held {
		return b.heldBy(key, metaPath), true, nil
	}
	if m, ok, _ := readMeta(metaPath); ok && m.Key == key && m.heldWithoutProcess(time.Now()) {
		return m.holder(time.Now()), true, nil
	}
	return lock.Holder{}, false, nil
}

// Break implements lock.Backend. The flock belongs to the holder's process
// and cannot be taken from it: break removes the sidecar that names the
// holder and signals the holding distlock (SIGWINCH, harmless to anything
// else) so that its renewer checks at once, finds the lease gone, stops its
// child and lets go of the flock.
//
// Inspection and removal are one step under the key's record lock, which
// every writer of the sidecar holds too (record.go): the sidecar removed is
// the one inspected (with token != 0, the holder with that token; without,
// the holder returned), never the next holder's, and a renewal of the
// broken holder that read the sidecar before cannot write it back after.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	if h, handled, err := b.breakSlots(ctx, key, token); handled {
		return h, err // a semaphore (semaphore.go)
	}
	h, held, err := b.inspectMutex(key)
	if err != nil || !held {
		// Free: nothing to break (and no record lock to make for a key
		// that may never have been used).
		if err == nil {
			err = lock.ErrNotHeld
		}
		return h, err
	}
	_, metaPath, _ := b.paths(key)
	err = withRecordLock(ctx, b.recordLock(key), func() error {
		now, held, err := b.inspectMutex(key) // again, now that no record can change
		h = now
		switch {
		case err != nil:
			return err
		case !held:
			return lock.ErrNotHeld
		case token != 0 && h.Token != token:
			return &lock.BusyError{Holder: h}
		}
		if err := os.Remove(metaPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return h, err
	}
	if h.Hold == "" && h.Meta.PID > 0 && h.Meta.Host == b.host {
		pokeHolder(h.Meta.PID)
	}
	return h, nil
}

// isLocked probes a lock file with a shared non-blocking flock.
func isLocked(lockPath string) (bool, error) {
	f, err := os.Open(lockPath)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
