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
	// HeldAtOnce says the caller will Hold the lease for TTL as soon as it
	// is granted and never renew it (distlock acquire). An engine whose
	// running lease cannot be as long as TTL (a ZooKeeper session is
	// clamped by the server) may then grant it anyway: only the hold has
	// to last TTL.
	HeldAtOnce bool
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
	// Limit is the --limit of a semaphore's holder (> 1), and Slot its
	// slot (0..Limit-1); 0 and 0 for a mutex, or when the engine cannot
	// tell (it does not implement SlotInspector).
	Limit int
	Slot  int
}

// SlotInspector is implemented by engines that can describe every holder
// of a semaphore, not only the one Inspect and List describe it by.
type SlotInspector interface {
	// InspectSlots returns every current holder of key, sorted by slot,
	// each with Limit and Slot set; nil when the key is free. A mutex
	// gives its one holder (Limit 0).
	InspectSlots(ctx context.Context, key string) ([]Holder, error)
}

// Backend is one lock engine (file, redis, etcd, ...). docs/ARCHITECTURE.md
// ("The engine contract") says what each method must guarantee; the
// conformance suite in internal/lock/locktest checks it, and a new engine
// starts by running that suite against itself.
type Backend interface {
	// Contend returns a contender for req: this process's attempt at the
	// key, from its first try until it holds the lock or gives up. It does
	// no I/O: a try-once pays only for its Try.
	Contend(req Request) Contender
	// Inspect reports the current holder; ok is false when the key is free.
	Inspect(ctx context.Context, key string) (h Holder, ok bool, err error)
	// List returns the current holder of every held key that starts with
	// keyPrefix ("" = all keys), sorted by key (SortHolders). A key whose
	// lease has expired, or whose holder is gone, is not listed.
	List(ctx context.Context, keyPrefix string) ([]Holder, error)
	// Break removes the lock on key whoever holds it. With token != 0 it only
	// breaks a holder with that token (compare-and-delete); otherwise it
	// returns a *BusyError describing the holder it left alone. It returns
	// ErrNotHeld when the key is free. After Break returns, the broken
	// holder's next Renew answers ErrNotHeld.
	Break(ctx context.Context, key string, token uint64) (Holder, error)
	// Resume returns the lease named by h (made by Lease.Handle in another
	// process) if the engine still says it is h.Owner's with h.Token;
	// ErrNotHeld otherwise.
	Resume(ctx context.Context, h Handle) (Lease, error)
	// Guarantee is one line on what exclusivity this engine promises.
	Guarantee() string
	// Close releases the engine's connections.
	Close() error
}

// Lease is a granted lock. Renew, Release and Hold are owner-checked.
type Lease interface {
	Key() string
	Token() uint64
	Owner() string
	// Granted is the monotonic time measured just before the request that
	// granted the lease was sent; validity is counted from it.
	Granted() time.Time
	// Renew extends the lease to a full TTL from the moment it is sent.
	// It returns ErrNotHeld when the engine answers that the lease is no
	// longer ours; any other error is transient. It must return promptly
	// when ctx ends.
	Renew(ctx context.Context) error
	// Release frees the lock if it is still ours. Releasing a lease that is
	// already gone returns ErrNotHeld.
	Release(ctx context.Context) error
	// Hold keeps the lock held for d from now with no renewals (the engine
	// expires it then), marked with mode (HoldMinHold, HoldHandle).
	// ErrNotHeld when the lease is no longer ours. Only Release or Handle
	// may be called on the lease afterwards.
	Hold(ctx context.Context, d time.Duration, mode string) error
	// Handle describes the lease so another process can Resume it.
	Handle() Handle
	// Alerts gets a value when the engine hears that the lease may have
	// been taken away (the file engine: a local break signals the holder);
	// the keeper then renews at once to find out. nil when the engine has
	// no such news: the keeper's own renewals find out.
	Alerts() <-chan struct{}
}

// Contender is one process's attempt at a key (Backend.Contend). The wait
// loop in internal/acquire drives it: Try; when busy and still waiting,
// Wait, then sleep until Retry says to Try again; Leave when giving up
// without a lease. A contender is used by one goroutine.
type Contender interface {
	// Try makes one attempt: the lease, or a *BusyError naming the holder
	// (a *LimitMismatchError when the key is held with another limit), or
	// another error, which ends the wait. Before the first Wait it is a
	// plain try-once; after it, the contender may hold a place in line.
	Try(ctx context.Context) (Lease, error)
	// Wait is called after a busy Try when the caller will try again: the
	// contender joins the key's line if the engine keeps one, and says
	// when trying again is worthwhile.
	Wait(ctx context.Context) (Retry, error)
	// Leave gives up: it leaves the line and frees whatever the contender
	// holds. Called once, only when Try gave no lease; it uses its own
	// short context, since the caller's may have just ended.
	Leave()
}

// Retry says when a busy contender should try again: when Wake gets a
// value, After has passed (<0: no bound), or, when Poll > 0, at the wait
// loop's jittered backoff capped at Poll, whichever comes first.
type Retry struct {
	Wake  <-chan struct{}
	After time.Duration
	Poll  time.Duration
}

// NoBound is Retry.After when the engine sets no time to try again.
const NoBound = time.Duration(-1)

// FileLocked says whether a lease's lock is a lock on open files (the file
// engine's flock): every lock.Held implements it, and LockFiles is nil
// unless the engine's store keeps the lock on open files. The kernel keeps such a lock for as long as
// any descriptor of those open files lives, in any process, and frees it
// the moment the last one closes. A run hands duplicates of them to its
// group watcher, which keeps them open until the command's process group
// is gone, so that a SIGKILLed distlock does not free the lock while its
// command is still dying (docs/GUARANTEES.md). Whoever holds a duplicate
// must never unlock it: unlocking any descriptor of the open file unlocks
// them all; only the lease's Release or Hold may.
type FileLocked interface {
	// LockFiles returns the open files that hold the lease's lock; nil
	// when the lock is not on open files, or once the lease is released.
	LockFiles() []*os.File
}
