package file

// Semaphores (--limit N > 1) on the file engine.
//
// # Layout
//
// A mutex is a semaphore of one: slot 0 of 1, whose lock file and record
// are the key's own "<base>.lock" and "<base>.json" (paths.go), as every
// distlock version has them. Next to those a semaphore of N uses, per slot
// i in 0..N-1:
//
//	<base>#slot<i>.lock   flock(LOCK_EX) held by the slot's holder
//	<base>#slot<i>.json   the slot holder's record (meta, with limit and slot)
//
// One lease type (lease.go) holds either, one record type (meta.go) names
// either, and renewal, release, hold (hold.go) and break (break.go) are the
// same for both; only the acquisition differs, as below.
//
// The separator is '#' rather than '.' because baseName escapes '#' in every
// key and prefix but keeps '.': with ".slot0.lock", KEY's slot 0 and the
// mutex of the key "KEY.slot0" would share a file.
//
// Plus "<base>#sem.lock", a short flock that serialises every acquisition
// of the key's slots and every scan of them (inspection, break; held for a
// few file operations, never while a command runs), so that the limit
// check, the choice of the lowest free slot and the fencing counter update
// are one step.
//
// Every slot holder also holds a shared flock (LOCK_SH) on "<base>.lock",
// the mutex's own lock file, for as long as it holds its slot. A mutex
// holder (--limit 1) takes that file exclusively, so the kernel keeps the two
// modes apart: a semaphore acquirer that finds the mutex held is refused
// with a *lock.LimitMismatchError, and so is a mutex acquirer that finds
// slots held (slotLimit reads the limit from their records).
//
// Fencing tokens come from the key's one counter file "<base>.token" with
// the same max(counter+1, now in µs) rule as the mutex (token.go). It is
// only ever written under the mutex's exclusive flock or under the short
// flock while holding the shared one, so writers never overlap, and tokens
// rise strictly across mutex and semaphore acquisitions of the key alike.
//
// A holder that dies loses its flocks with its process: its slot is free at
// once. A break removes the slot's record and pokes the holder (SIGWINCH),
// whose renewer then finds the lease gone, as for the mutex (break.go).
// Records are written and removed under the key's record lock
// "<base>#rec.lock" (record.go), taken inside the short flock or without
// it, never around it: a break is a compare-and-delete of the record it
// inspected, and a renewal that read the record before the break cannot
// write it back.

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// shortLockWait bounds the wait for the short flock; it is held for a few
// file operations only, so waiting longer means a holder is stuck
// (stopped by a signal, say).
const shortLockWait = 5 * time.Second

// lockShort takes the key's short flock, polling so that ctx is honoured.
func lockShort(ctx context.Context, path string) (*os.File, error) {
	f, err := openLock(path, true)
	if err != nil {
		return nil, err
	}
	if err := pollFlock(ctx, f, shortLockWait, 100*time.Microsecond, 10*time.Millisecond); err != nil {
		if errors.Is(err, errStuck) {
			return nil, &lock.UnavailableError{Msg: err.Error(), Err: err}
		}
		return nil, err
	}
	return f, nil
}

// trySemaphore is the try-once for req.Limit > 1: take the lowest free slot.
func (b *Backend) trySemaphore(ctx context.Context, req lock.Request) (lock.Lease, error) {
	p := b.keyPaths(req.Key)
	short, err := lockShort(ctx, p.semLock())
	if err != nil {
		return nil, err
	}
	defer unlockClose(short)
	granted := time.Now()
	mode, err := shareKeyLock(req, p)
	if err != nil {
		return nil, err
	}
	mine, held, err := scanSlots(req.Key, p, req.Limit)
	if err == nil {
		err = refuseSlots(req, held, mine)
	}
	var l lock.Lease
	if err == nil {
		l, err = b.grant(ctx, req, mine.slot, []*os.File{mine.f, mode}, granted)
	}
	if err != nil {
		if mine != nil {
			unlockClose(mine.f)
		}
		unlockClose(mode)
		return nil, err
	}
	return l, nil
}

// shareKeyLock takes the key's lock file shared, for as long as the slot is
// held: a mutex holder holds it exclusively, so the two exclude each other.
func shareKeyLock(req lock.Request, p keyPaths) (*os.File, error) {
	mismatch := &lock.LimitMismatchError{Key: req.Key, Want: req.Limit, Have: 1}
	lockPath, recordPath := p.slot(1, 0)
	mode, err := openLock(lockPath, true)
	if err != nil {
		return nil, err
	}
	if taken, err := tryFlock(mode, syscall.LOCK_SH); !taken {
		mode.Close()
		if err != nil {
			return nil, err
		}
		return nil, mismatch
	}
	// A mutex kept by a hold (min-hold, CI handle) has no flock any more;
	// its record says so.
	if (slotHolder{mutex: true, path: recordPath}).read(req.Key).kept() {
		unlockClose(mode)
		return nil, mismatch
	}
	return mode, nil
}

// refuseSlots is the refusal of req after a scan: the holders use another
// limit (*lock.LimitMismatchError), or every slot is held (*lock.BusyError
// naming the oldest holder); nil when mine is free to take.
func refuseSlots(req lock.Request, held []slotHolder, mine *freeSlot) error {
	n := req.Limit
	for _, h := range held {
		if h.ok && h.m.Limit != n && h.m.Limit > 0 {
			return &lock.LimitMismatchError{Key: req.Key, Want: n, Have: h.m.Limit}
		}
		if h.slot >= n { // only a holder with a larger limit can be there
			return &lock.LimitMismatchError{Key: req.Key, Want: n, Have: max(h.m.Limit, h.slot+1)}
		}
	}
	if mine == nil {
		return &lock.BusyError{Holder: oldest(held).holder(req.Key, time.Now())}
	}
	return nil
}

// freeSlot is a slot whose flock a scan took.
type freeSlot struct {
	slot int
	f    *os.File
}

// scanSlots looks at every slot file of key (creating those below n): it
// keeps the lowest free slot below n locked (mine, nil when none) and
// describes the held ones. Call it under the short flock.
func scanSlots(key string, p keyPaths, n int) (mine *freeSlot, held []slotHolder, err error) {
	for i := 0; i < maxLimit && err == nil; i++ {
		lockPath, recordPath := p.semSlot(i)
		f, oerr := openLock(lockPath, i < n)
		if errors.Is(oerr, os.ErrNotExist) {
			break // slot files are made lowest first: no more beyond
		}
		if oerr != nil {
			err = oerr
			break
		}
		s := slotHolder{slot: i, path: recordPath}
		taken, ferr := tryFlock(f, syscall.LOCK_EX)
		if taken {
			// No process holds the slot; a hold (min-hold) may keep it.
			// Hold writes its record before it lets go of the flock.
			if s = s.read(key); s.kept() {
				unlockClose(f)
				held = append(held, s)
				continue
			}
		}
		switch {
		case taken && i < n && mine == nil:
			mine = &freeSlot{slot: i, f: f}
		case taken:
			unlockClose(f)
		case ferr == nil: // another process holds the slot
			f.Close()
			held = append(held, s.read(key))
		default:
			f.Close()
			err = ferr
		}
	}
	if err != nil && mine != nil {
		unlockClose(mine.f)
		mine = nil
	}
	return mine, held, err
}

// maxLimit bounds slot scans (run --limit allows 1..1000).
const maxLimit = 1000

// heldSlots describes the held slots of key, in slot order. Call it under
// the short flock.
func heldSlots(key string, p keyPaths) ([]slotHolder, error) {
	var held []slotHolder
	for i := 0; i < maxLimit; i++ {
		lockPath, recordPath := p.semSlot(i)
		s, isHeld, err := probe(key, lockPath, slotHolder{slot: i, path: recordPath})
		if err != nil {
			return nil, err
		}
		if isHeld {
			held = append(held, s)
		} else if !exists(lockPath) {
			break
		}
	}
	return held, nil
}

// semHolders is heldSlots under the short flock: nothing when the key has
// never been a semaphore.
func (b *Backend) semHolders(ctx context.Context, key string) ([]slotHolder, error) {
	p := b.keyPaths(key)
	if !p.anySlotFiles() {
		return nil, nil
	}
	short, err := lockShort(ctx, p.semLock())
	if err != nil {
		return nil, err
	}
	defer unlockClose(short)
	return heldSlots(key, p)
}

// keptSlot reports whether a slot of key is kept by a hold (min-hold),
// which no process holds a flock for: a mutex acquirer that got the key's
// lock file must still find the key busy.
func (b *Backend) keptSlot(key string) bool {
	p := b.keyPaths(key)
	for i := 0; i < maxLimit; i++ {
		lockPath, recordPath := p.semSlot(i)
		if !exists(lockPath) {
			return false
		}
		if (slotHolder{slot: i, path: recordPath}).read(key).kept() {
			return true
		}
	}
	return false
}

// slotLimit is the --limit the holders of key's slots use; ok is false
// when no slot is held. A mutex acquirer that finds the key's lock file
// shared by slot holders is refused with it, as every engine refuses a
// mismatched --limit.
func (b *Backend) slotLimit(ctx context.Context, key string) (limit int, ok bool) {
	held, err := b.semHolders(ctx, key)
	if err != nil || len(held) == 0 {
		return 0, false
	}
	for _, h := range held {
		limit = max(limit, h.m.Limit, h.slot+1)
	}
	return max(limit, 2), true
}
