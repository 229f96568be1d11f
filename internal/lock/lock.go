// Package lock is the engine-neutral contract between distlock's commands and
// its engines: a Backend grants Leases on keys, each with a fencing token, and
// describes their Holders. It knows nothing of children or timing policy.
package lock

import (
	"context"
	"os"
	"time"
)

// Request asks a Backend for a lease on Key.
type Request struct {
	Key   string        // user's key, without the prefix
	TTL   time.Duration // lease time-to-live; the engine expires it after this
	Owner string        // secret owner id, known only to this process
	Meta  Meta          // who is asking, shown by status
	// Limit > 1 makes the key a semaphore: up to Limit holders at once,
	// each in its own slot (0..Limit-1) with its own fencing token. All
	// holders of a key must agree on Limit. 0 and 1 mean a mutex.
	Limit int
}

// Slotted is implemented by leases on a semaphore (Request.Limit > 1).
type Slotted interface {
	Slot() int
}

// Meta describes the process that holds (or asks for) a lock. It never holds
// the full argv: argv may carry secrets, so only argv[0] is kept.
type Meta struct {
	Host    string
	PID     int // the distlock process (the one to signal), not its child
	User    string
	Command string // argv[0] of the child
	Note    string
}

// Holder is what an engine knows of the current holder of a key.
type Holder struct {
	Key        string
	Owner      string
	Token      uint64
	Meta       Meta
	AcquiredAt time.Time     // wall clock, as recorded by the engine
	TTL        time.Duration // the lease's TTL
	ExpiresIn  time.Duration // time left before the engine expires the lease; <0 unknown
	// Hold is set when no process renews the lease any more and it is kept
	// until it expires: HoldMinHold or HoldHandle.
	Hold string
}

// Backend is one lock engine (file, redis, etcd, ...).
type Backend interface {
	// TryAcquire makes one attempt to take the lock. When the key is held by
	// someone else it returns a *BusyError (errors.Is(err, ErrHeld)).
	TryAcquire(ctx context.Context, req Request) (Lease, error)
	// Inspect reports the current holder; ok is false when the key is free.
	Inspect(ctx context.Context, key string) (h Holder, ok bool, err error)
	// Break removes the lock on key whoever holds it. With token != 0 it only
	// breaks a holder with that token (compare-and-delete); otherwise it
	// returns a *BusyError describing the holder it left alone. It returns
	// ErrNotHeld when the key is free.
	Break(ctx context.Context, key string, token uint64) (Holder, error)
	// Guarantee is one line on what exclusivity this engine promises.
	Guarantee() string
	// Close releases the engine's connections.
	Close() error
}

// Lease is a granted lock. Renew and Release are owner-checked.
type Lease interface {
	Key() string
	Token() uint64
	Owner() string
	// Granted is the monotonic time measured just before the request that
	// granted the lease was sent; validity is counted from it.
	Granted() time.Time
	// Renew extends the lease to a full TTL from the moment it is sent.
	// It returns ErrNotHeld when the engine answers that the lease is no
	// longer ours; any other error is transient.
	Renew(ctx context.Context) error
	// Release frees the lock if it is still ours. Releasing a lease that is
	// already gone returns ErrNotHeld.
	Release(ctx context.Context) error
}

// Notifier is implemented by engines that can tell a waiter that a key may
// have become free (Redis pub/sub, etcd watch). The channel gets a value
// (non-blocking sends) whenever the key may be free; stop ends the
// subscription. Waiters still poll as a fallback.
type Notifier interface {
	Notify(ctx context.Context, key string) (ch <-chan struct{}, stop func(), err error)
}

// Queuer is implemented by engines whose waiters queue in arrival order
// (etcd). Acquire blocks until the lease is granted, ctx ends (deadline:
// busy), or an error occurs; progress is called with the current holder
// whenever it changes, and may be nil.
type Queuer interface {
	Acquire(ctx context.Context, req Request, progress func(Holder)) (Lease, error)
}

// FileLocked is implemented by leases whose lock is a lock on open files
// (the file engine's flock): the kernel keeps such a lock for as long as
// any descriptor of those open files lives, in any process, and frees it
// the moment the last one closes. A run hands duplicates of them to its
// group watcher, which keeps them open until the command's process group
// is gone, so that a SIGKILLed distlock does not free the lock while its
// command is still dying (docs/GUARANTEES.md). Whoever holds a duplicate
// must never unlock it: unlocking any descriptor of the open file unlocks
// them all; only the lease's Release or Hold may.
type FileLocked interface {
	// LockFiles returns the open files that hold the lease's lock, or nil
	// once the lease has been released.
	LockFiles() []*os.File
}
