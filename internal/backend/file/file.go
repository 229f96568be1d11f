// Package file is the zero-setup engine: flock(2) on a per-key file in a
// local directory. The kernel drops the lock when the holder dies, so a
// lease cannot outlive its process; the TTL only drives renewal (which
// checks that the sidecar still names us) and what status shows. Every
// read-check-write of a sidecar holds the key's record lock (record.go).
// A mutex is a semaphore of one: one acquisition (slots.go), one lease
// (lease.go) and one record (record.go) serve every limit.
package file

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Backend is a directory of lock files.
type Backend struct {
	dir    string
	prefix string
	host   string
	log    *slog.Logger // warnings of the leases it grants
	picked bool         // dir is DefaultDir(), not one the user named
	// dirErr is why the directory could not be created (OpenForDoctor
	// only): Doctor reports it as its writable check.
	dirErr error
}

// Open uses dir ("" = DefaultDir(), which must be ours alone:
// checkOwnDir), creating it with mode 0700; prefix must make file names
// (checkPrefix).
func Open(dir, prefix string) (*Backend, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	b := OpenForDoctor(dir, prefix)
	if b.dirErr != nil {
		return nil, b.dirErr
	}
	return b, nil
}

// OpenForDoctor is Open for distlock doctor: a directory that cannot be
// created is a failed check to report, not a reason to stop, so it returns
// the backend all the same (its locks then fail as Open would have).
func OpenForDoctor(dir, prefix string) *Backend {
	picked := dir == ""
	if picked {
		dir = DefaultDir()
	}
	host, _ := os.Hostname()
	b := &Backend{dir: dir, prefix: prefix, host: host, log: slog.Default(), picked: picked}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.dirErr = unavailable("create lock directory "+dir, err)
	} else if picked {
		b.dirErr = checkOwnDir(dir)
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

// Guarantee is what the file engine promises, in one line (status's
// engine: line).
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
		lockPath := b.keyPaths(req.Key).lock()
		p.Wake = func(ctx context.Context) (<-chan struct{}, func(), error) { return watchReleases(ctx, lockPath) }
	}
	return p
}

// unavailable is err, a file operation's, as the one line distlock shows:
// "cannot <what>: <the system's reason>".
func unavailable(what string, err error) error {
	return &lock.UnavailableError{Msg: fmt.Sprintf("cannot %s: %v", what, errors.Unwrap(err)), Err: err}
}
