package file

// One acquisition for every limit: a mutex is a semaphore of one
// (docs/ARCHITECTURE.md, "file", has the layout). Slot 0 of 1 is the key's
// own "<base>.lock", held exclusively, as every distlock version has it; a
// semaphore's slot i holds "<base>#slot<i>.lock" exclusively and the key's
// lock file shared, so the kernel keeps the two modes apart. ('#', which
// baseName escapes in keys, keeps slot files apart from every key's own.)
// Every look at slot files runs under the key's short flock, so a
// semaphore's limit check, slot choice and token are one step. A hold's
// record is written before its flocks go (lease.go), so a scan that takes
// a slot's flock and then reads its record sees the hold.

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// shortLockWait bounds the wait for the short flock: waiting longer means
// one of its holders is stuck (stopped by a signal, say).
const shortLockWait = 5 * time.Second

// maxLimit bounds slot scans (run --limit allows 1..1000).
const maxLimit = 1000

// lockShort takes the key's short flock.
func lockShort(ctx context.Context, p keyPaths) (*os.File, error) {
	return lockBrief(ctx, p.semLock(), os.O_CREATE, shortLockWait, 100*time.Microsecond, 10*time.Millisecond)
}

// tryOnce makes one attempt at req: the lowest free slot of req.Limit (a
// mutex: its one slot), granted as a lease (lease.go). A directory doctor
// found unfit (OpenForDoctor's dirErr) is refused as Open refused it:
// doctor's lock check must not write lock files where someone else could
// have planted names.
func (b *Backend) tryOnce(ctx context.Context, req lock.Request) (lock.Lease, error) {
	if b.dirErr != nil {
		return nil, b.dirErr
	}
	n := max(req.Limit, 1)
	if n > 1 {
		short, err := lockShort(ctx, b.keyPaths(req.Key))
		if err != nil {
			return nil, err
		}
		defer unlockClose(short)
	}
	granted := time.Now()
	held, files, slot, err := b.scan(ctx, req.Key, n)
	var l lock.Lease
	if err == nil { // lock.Refuse: busy when no slot was free, or another limit is in use
		limits := make([]lock.SeenLimit, len(held))
		for i, h := range held {
			limits[i] = h.seenLimit()
		}
		err = lock.Refuse(req.Key, n, describe(req.Key, held), limits, files == nil)
	}
	if err == nil {
		l, err = b.grant(ctx, req, slot, files, granted)
	}
	if err != nil {
		for _, f := range files {
			unlockClose(f)
		}
	}
	return l, err
}

// scan looks at key for a request of n slots (n 0: only to describe it,
// taking nothing): it returns the held slots, the mutex's or a
// semaphore's, and, when n > 0 and a slot below n is free, the flocks that
// hold it (files, the slot's own first, then a semaphore's shared one on
// the key's lock file) and its number. A mutex takes the key's lock file
// exclusively, a semaphore shared, then its lowest free slot file; a probe
// takes it shared for a moment only (an exclusive holder refuses it: the
// mutex's). With n > 1 the caller holds the short flock. On error nothing
// is held.
func (b *Backend) scan(ctx context.Context, key string, n int) (held []slotHolder, files []*os.File, slot int, err error) {
	p := b.keyPaths(key)
	keyLock, err := openLock(p.lock(), n > 0)
	if n == 0 && errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil // never taken
	}
	if err != nil {
		return nil, nil, 0, err
	}
	how := syscall.LOCK_SH
	if n == 1 {
		how = syscall.LOCK_EX
	}
	taken, err := tryFlock(keyLock, how)
	if n == 0 && taken { // a probe: let go at once, not while the slots are scanned
		syscall.Flock(int(keyLock.Fd()), syscall.LOCK_UN)
	}
	mutex := slotHolder{mutex: true, path: p.record()}.read(key)
	var mine *os.File
	switch {
	case err != nil:
	case !taken || mutex.kept(): // a mutex holder, or a mutex kept by a hold
		held = []slotHolder{mutex}
		if n == 1 && !taken && !mutex.ok { // no mutex on record: slot holders may share the file
			if slots, _ := b.semHolders(ctx, key); len(slots) > 0 {
				held = slots
			}
		}
	case n <= 1: // no mutex: a semaphore's slots are held, or kept by holds
		if n == 1 {
			mine = keyLock
		}
		held, err = b.semHolders(ctx, key)
	default:
		slot, mine, held, err = scanSlots(key, p, n)
	}
	switch {
	case err != nil || mine == nil:
		unlockClose(keyLock) // unlocking a flock not taken is harmless
		return held, nil, 0, err
	case mine == keyLock:
		return held, []*os.File{keyLock}, 0, nil
	}
	return held, []*os.File{mine, keyLock}, slot, nil
}

// scanSlots looks at every slot file of key under the short flock, creating
// those below n: it keeps the lowest free slot below n locked (mine, nil
// when none; n 0 only describes) and describes the held ones, in slot
// order. A slot is held when a process holds its flock or a hold keeps it.
func scanSlots(key string, p keyPaths, n int) (slot int, mine *os.File, held []slotHolder, err error) {
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
		taken, ferr := tryFlock(f, syscall.LOCK_EX)
		s := slotHolder{slot: i, path: recordPath}.read(key) // after the flock: a hold writes first
		switch {
		case ferr != nil:
			f.Close()
			err = ferr
		case !taken:
			f.Close()
			held = append(held, s)
		case s.kept():
			unlockClose(f)
			held = append(held, s)
		case i < n && mine == nil:
			slot, mine = i, f
		default:
			unlockClose(f)
		}
	}
	if err != nil && mine != nil {
		unlockClose(mine)
		mine = nil
	}
	return slot, mine, held, err
}

// semHolders describes the held slots of key, under the short flock:
// nothing when the key has never been a semaphore (slot files are made
// lowest first, so slot 0's exists).
func (b *Backend) semHolders(ctx context.Context, key string) ([]slotHolder, error) {
	p := b.keyPaths(key)
	slot0, _ := p.semSlot(0)
	if _, err := os.Stat(slot0); err != nil {
		return nil, nil
	}
	short, err := lockShort(ctx, p)
	if err != nil {
		return nil, err
	}
	defer unlockClose(short)
	_, _, held, err := scanSlots(key, p, 0)
	return held, err
}
