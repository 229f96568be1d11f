package file

// Semaphores (--limit N > 1) on the file engine.
//
// # Layout
//
// Next to the mutex files of KEY ("<base>.lock", "<base>.json",
// "<base>.token", see paths.go) a semaphore uses, per slot i in 0..N-1:
//
//	<base>#slot<i>.lock   flock(LOCK_EX) held by the slot's holder
//	<base>#slot<i>.json   the slot holder's sidecar (slotMeta: meta + limit, slot)
//
// The separator is '#' rather than '.' because baseName escapes '#' in every
// key and prefix but keeps '.': with ".slot0.lock", KEY's slot 0 and the
// mutex of the key "KEY.slot0" would share a file.
//
// Plus "<base>#sem.lock", a short flock that serialises every acquisition,
// inspection and break of the key's slots (held for a few file operations,
// never while a command runs), so that the limit check, the choice of the
// lowest free slot and the fencing counter update are one step.
//
// Every slot holder also holds a shared flock (LOCK_SH) on "<base>.lock",
// the mutex's own lock file, for as long as it holds its slot. A mutex
// holder (--limit 1) takes that file exclusively, so the kernel keeps the two
// modes apart: a semaphore acquirer that finds the mutex held is refused
// with a *lock.LimitMismatchError, and so is a mutex acquirer that finds
// slots held (slotLimit reads the limit from their sidecars).
//
// Fencing tokens come from the key's one counter file "<base>.token" with
// the same max(counter+1, now in µs) rule as the mutex (token.go). It is
// only ever written under the mutex's exclusive flock or under the short
// flock while holding the shared one, so writers never overlap, and tokens
// rise strictly across mutex and semaphore acquisitions of the key alike.
//
// A holder that dies loses its flocks with its process: its slot is free at
// once. A break removes the slot's sidecar and pokes the holder (SIGWINCH),
// whose renewer then finds the lease gone, exactly as for the mutex. Slot
// sidecars are written and removed under the key's record lock
// "<base>#rec.lock" (record.go), taken inside the short flock, never around
// it: a break is a compare-and-delete of the sidecar it inspected, and a
// renewal that read the sidecar before the break cannot write it back.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// slotMeta is a slot holder's sidecar: the mutex sidecar's fields plus the
// limit the holder asked for (all holders must agree) and its slot.
type slotMeta struct {
	meta
	Limit int `json:"limit"`
	Slot  int `json:"slot"`
}

// semPaths names a key's semaphore files.
type semPaths struct{ base string }

func (b *Backend) semPaths(key string) semPaths {
	return semPaths{base: filepath.Join(b.dir, baseName(b.prefix, key))}
}

func (p semPaths) modeLock() string      { return p.base + ".lock" } // the mutex's lock file
func (p semPaths) mutexMeta() string     { return p.base + ".json" }
func (p semPaths) token() string         { return p.base + ".token" }
func (p semPaths) short() string         { return p.base + "#sem.lock" }
func (p semPaths) slotLock(i int) string { return p.base + "#slot" + strconv.Itoa(i) + ".lock" }
func (p semPaths) slotMeta(i int) string { return p.base + "#slot" + strconv.Itoa(i) + ".json" }

// anySlotFiles: the key has been used as a semaphore (slot files are made
// lowest first, so slot 0's exists).
func (p semPaths) anySlotFiles() bool { return exists(p.slotLock(0)) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func unlockClose(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// readSlotMeta reads a slot sidecar; ok is false when it is missing or
// unreadable (a torn or foreign file counts as no holder metadata).
func readSlotMeta(path string) (m slotMeta, ok bool, err error) {
	data, touched, err := readRecord(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	if json.Unmarshal(data, &m) != nil {
		return slotMeta{}, false, nil
	}
	m.touched = touched
	return m, true, nil
}

func writeSlotMeta(path string, m slotMeta) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeAtomic(path, data, false)
}

// shortLockWait bounds the wait for the short flock; it is held for a few
// file operations only, so waiting longer means a holder is stuck
// (stopped by a signal, say).
const shortLockWait = 5 * time.Second

// lockShort takes the key's short flock, polling without blocking in the
// kernel so that ctx is honoured.
func lockShort(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot open lock file %s: %v", path, errors.Unwrap(err)), Err: err}
	}
	deadline := time.Now().Add(shortLockWait)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, &lock.UnavailableError{Msg: fmt.Sprintf("%s stayed locked for %s: a distlock process holding it is stuck (stopped?)", path, shortLockWait)}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// slotHolder is one held slot seen by a scan.
type slotHolder struct {
	slot int
	m    slotMeta
	ok   bool // m was readable (a broken holder has no sidecar until it lets go)
}

func (s slotHolder) holder(key string, now time.Time) lock.Holder {
	if !s.ok {
		return lock.Holder{Key: key, ExpiresIn: -1, Slot: s.slot, Limit: max(2, s.slot+1)}
	}
	h := s.m.holder(now)
	h.Slot, h.Limit = s.slot, max(2, s.m.Limit, s.slot+1)
	return h
}

// oldest is the holder with the lowest fencing token (the one that has held
// longest); holders without a readable sidecar come last.
func oldest(hs []slotHolder) slotHolder {
	best := hs[0]
	for _, h := range hs[1:] {
		if h.ok && (!best.ok || h.m.Token < best.m.Token) {
			best = h
		}
	}
	return best
}

// trySemaphore is the try-once for req.Limit > 1: take the lowest free slot.
func (b *Backend) trySemaphore(ctx context.Context, req lock.Request) (lock.Lease, error) {
	n := req.Limit
	p := b.semPaths(req.Key)
	short, err := lockShort(ctx, p.short())
	if err != nil {
		return nil, err
	}
	defer unlockClose(short)
	granted := time.Now()

	mode, err := os.OpenFile(p.modeLock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot open lock file %s: %v", p.modeLock(), errors.Unwrap(err)), Err: err}
	}
	if err := flock(mode, syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		mode.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &lock.LimitMismatchError{Key: req.Key, Want: n, Have: 1}
		}
		return nil, fmt.Errorf("flock %s: %w", p.modeLock(), err)
	}
	// A mutex kept by a hold (min-hold, CI handle) has no flock any more;
	// its sidecar says so.
	if m, ok, _ := readMeta(p.mutexMeta()); ok && m.Key == req.Key && m.heldWithoutProcess(time.Now()) {
		unlockClose(mode)
		return nil, &lock.LimitMismatchError{Key: req.Key, Want: n, Have: 1}
	}
	mine, held, err := scanSlots(p, n)
	if err != nil {
		unlockClose(mode)
		return nil, err
	}
	fail := func(err error) (lock.Lease, error) {
		if mine != nil {
			unlockClose(mine.f)
		}
		unlockClose(mode)
		return nil, err
	}
	for _, h := range held {
		if h.ok && h.m.Limit != n && h.m.Limit > 0 {
			return fail(&lock.LimitMismatchError{Key: req.Key, Want: n, Have: h.m.Limit})
		}
		if h.slot >= n { // only a holder with a larger limit can be there
			return fail(&lock.LimitMismatchError{Key: req.Key, Want: n, Have: max(h.m.Limit, h.slot+1)})
		}
	}
	if mine == nil {
		return fail(&lock.BusyError{Holder: oldest(held).holder(req.Key, time.Now())})
	}
	now := time.Now()
	tok, err := nextToken(p.token(), now)
	if err != nil {
		return fail(fmt.Errorf("fencing counter for %s: %w", req.Key, err))
	}
	m := slotMeta{
		meta: meta{
			Key: req.Key, Owner: req.Owner, Token: tok,
			Host: req.Meta.Host, PID: req.Meta.PID, User: req.Meta.User, Command: req.Meta.Command, Note: req.Meta.Note,
			AcquiredAt: now, RenewedAt: now, TTLms: req.TTL.Milliseconds(),
		},
		Limit: n, Slot: mine.slot,
	}
	l := &SlotLease{f: mine.f, mode: mode, meta: m, metaPath: p.slotMeta(mine.slot), granted: granted, recLock: b.recordLock(req.Key), log: b.log}
	if err := l.record().write(ctx, func() error { return writeSlotMeta(l.metaPath, m) }); err != nil {
		return fail(fmt.Errorf("holder metadata for %s: %w", req.Key, err))
	}
	return l, nil
}

// freeSlot is a slot whose flock a scan took.
type freeSlot struct {
	slot int
	f    *os.File
}

// scanSlots looks at every slot file of the key (creating those below n):
// it keeps the lowest free slot below n locked (mine, nil when none) and
// describes the held ones. Call it under the short flock.
func scanSlots(p semPaths, n int) (mine *freeSlot, held []slotHolder, err error) {
	for i := 0; i < maxLimit; i++ {
		path := p.slotLock(i)
		flags := os.O_RDWR
		if i < n {
			flags |= os.O_CREATE
		}
		f, err := os.OpenFile(path, flags, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			break // slot files are made lowest first: no more beyond
		}
		if err != nil {
			if mine != nil {
				unlockClose(mine.f)
			}
			return nil, nil, &lock.UnavailableError{Msg: fmt.Sprintf("cannot open lock file %s: %v", path, errors.Unwrap(err)), Err: err}
		}
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// No process holds the slot; a hold (min-hold) may keep it.
			// Hold writes its record before it lets go of the flock.
			if m, ok, _ := readSlotMeta(p.slotMeta(i)); ok && m.heldWithoutProcess(time.Now()) {
				unlockClose(f)
				held = append(held, slotHolder{slot: i, m: m, ok: true})
				continue
			}
		}
		switch {
		case err == nil && i < n && mine == nil:
			mine = &freeSlot{slot: i, f: f}
		case err == nil:
			unlockClose(f)
		case errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			m, ok, _ := readSlotMeta(p.slotMeta(i))
			held = append(held, slotHolder{slot: i, m: m, ok: ok})
		default:
			f.Close()
			if mine != nil {
				unlockClose(mine.f)
			}
			return nil, nil, fmt.Errorf("flock %s: %w", path, err)
		}
	}
	return mine, held, nil
}

// maxLimit bounds slot scans (run --limit allows 1..1000).
const maxLimit = 1000

// heldSlots describes the held slots of key, oldest first is not promised.
// Call it under the short flock.
func heldSlots(p semPaths) ([]slotHolder, error) {
	var held []slotHolder
	for i := 0; i < maxLimit; i++ {
		path := p.slotLock(i)
		locked, err := isLocked(path)
		if err != nil {
			return nil, err
		}
		m, ok, _ := readSlotMeta(p.slotMeta(i))
		if !locked {
			if !exists(path) {
				break
			}
			if ok && m.heldWithoutProcess(time.Now()) {
				held = append(held, slotHolder{slot: i, m: m, ok: true})
			}
			continue
		}
		held = append(held, slotHolder{slot: i, m: m, ok: ok})
	}
	return held, nil
}

// heldSlot describes the oldest slot of key kept by a hold (min-hold),
// which no process holds a flock for: a mutex acquirer that got the key's
// lock file must still find the key busy. ok is false when there is none.
func (b *Backend) heldSlot(key string) (h lock.Holder, ok bool) {
	p := b.semPaths(key)
	var kept []slotHolder
	for i := 0; i < maxLimit && exists(p.slotLock(i)); i++ {
		if m, ok, _ := readSlotMeta(p.slotMeta(i)); ok && m.Key == key && m.heldWithoutProcess(time.Now()) {
			kept = append(kept, slotHolder{slot: i, m: m, ok: true})
		}
	}
	if len(kept) == 0 {
		return lock.Holder{}, false
	}
	return oldest(kept).holder(key, time.Now()), true
}

// slotLimit is the --limit the holders of key's slots use; ok is false
// when no slot is held. A mutex acquirer that finds the key's lock file
// shared by slot holders is refused with it, as every engine refuses a
// mismatched --limit.
func (b *Backend) slotLimit(ctx context.Context, key string) (limit int, ok bool) {
	p := b.semPaths(key)
	if !p.anySlotFiles() {
		return 0, false
	}
	short, err := lockShort(ctx, p.short())
	if err != nil {
		return 0, false
	}
	defer unlockClose(short)
	held, err := heldSlots(p)
	if err != nil || len(held) == 0 {
		return 0, false
	}
	for _, h := range held {
		limit = max(limit, h.m.Limit, h.slot+1)
	}
	return max(limit, 2), true
}

// inspectSlots is Inspect's hook for semaphores: when any slot of key is
// held, it describes the oldest holder (lowest token) and reports held;
// otherwise it reports not held and Inspect goes on as for a mutex. Status
// shows one holder of a semaphore: the oldest, not all of them.
func (b *Backend) inspectSlots(ctx context.Context, key string) (lock.Holder, bool, error) {
	p := b.semPaths(key)
	if !p.anySlotFiles() {
		return lock.Holder{}, false, nil
	}
	short, err := lockShort(ctx, p.short())
	if err != nil {
		return lock.Holder{}, false, err
	}
	defer unlockClose(short)
	held, err := heldSlots(p)
	if err != nil || len(held) == 0 {
		return lock.Holder{}, false, err
	}
	return oldest(held).holder(key, time.Now()), true, nil
}

// InspectSlots implements lock.SlotInspector: every held slot of key, by
// slot, or the mutex's holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	p := b.semPaths(key)
	if p.anySlotFiles() {
		short, err := lockShort(ctx, p.short())
		if err != nil {
			return nil, err
		}
		held, err := heldSlots(p)
		unlockClose(short)
		if err != nil {
			return nil, err
		}
		if len(held) > 0 {
			now := time.Now()
			out := make([]lock.Holder, len(held))
			for i, s := range held {
				out[i] = s.holder(key, now)
			}
			return out, nil // heldSlots scans slots in order
		}
	}
	h, held, err := b.inspectMutex(key)
	if err != nil || !held {
		return nil, err
	}
	return []lock.Holder{h}, nil
}

// breakSlots is Break's hook for semaphores; handled is false when no slot
// of key is held (Break then goes on as for a mutex). With token != 0 it
// breaks the holder with that token, or returns a *lock.BusyError naming
// the oldest holder when none has it. With token 0 it breaks every holder
// of the semaphore and returns the oldest.
func (b *Backend) breakSlots(ctx context.Context, key string, token uint64) (h lock.Holder, handled bool, err error) {
	p := b.semPaths(key)
	if !p.anySlotFiles() {
		return lock.Holder{}, false, nil
	}
	short, err := lockShort(ctx, p.short())
	if err != nil {
		return lock.Holder{}, true, err
	}
	defer unlockClose(short)
	held, err := heldSlots(p)
	if err != nil {
		return lock.Holder{}, true, err
	}
	if len(held) == 0 {
		return lock.Holder{}, false, nil
	}
	now := time.Now()
	victims := held
	if token != 0 {
		victims = nil
		for _, s := range held {
			if s.ok && s.m.Token == token {
				victims = append(victims, s)
			}
		}
		if len(victims) == 0 {
			o := oldest(held).holder(key, now)
			return o, true, &lock.BusyError{Holder: o}
		}
	}
	// No new holder can take a slot while we hold the short flock, but the
	// victims still renew and release: each removal is a compare-and-delete
	// under the record lock.
	var broken []slotHolder
	for _, s := range victims {
		if !s.ok {
			broken = append(broken, s) // no sidecar: broken already
			continue
		}
		removed := false
		err := withRecordLock(ctx, b.recordLock(key), func() error {
			r := ownRecord{owner: s.m.Owner, token: s.m.Token, path: p.slotMeta(s.slot)}
			ours, err := r.names()
			if err != nil || !ours {
				return err // it let go of its slot meanwhile
			}
			if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			removed = true
			return nil
		})
		if err != nil {
			return s.holder(key, now), true, err
		}
		if !removed {
			continue
		}
		broken = append(broken, s)
		if s.m.Hold == "" && s.m.PID > 0 && s.m.Host == b.host { // a hold's process is gone
			pokeHolder(s.m.PID)
		}
	}
	if len(broken) == 0 {
		// Every victim let go by itself before we came to it.
		if token == 0 {
			return lock.Holder{}, true, lock.ErrNotHeld
		}
		var others []slotHolder
		for _, s := range held {
			if !s.ok || s.m.Token != token {
				others = append(others, s)
			}
		}
		if len(others) == 0 {
			return lock.Holder{}, true, lock.ErrNotHeld
		}
		o := oldest(others).holder(key, now)
		return o, true, &lock.BusyError{Holder: o}
	}
	return oldest(broken).holder(key, now), true, nil
}

// SlotLease is a held slot of a semaphore: the slot's flock, the shared
// flock on the key's mutex file, and the slot's sidecar naming us.
type SlotLease struct {
	mu       sync.Mutex
	f        *os.File // the slot's lock file, LOCK_EX
	mode     *os.File // the key's mutex lock file, LOCK_SH
	meta     slotMeta
	metaPath string
	granted  time.Time
	recLock  string // the key's record lock (record.go)
	log      *slog.Logger
	warned   recordWarner
}

var (
	_ lock.Lease      = (*SlotLease)(nil)
	_ lock.Slotted    = (*SlotLease)(nil)
	_ lock.FileLocked = (*SlotLease)(nil)
	_ lock.FileLocked = (*Lease)(nil)
)

func (l *SlotLease) Key() string        { return l.meta.Key }
func (l *SlotLease) Token() uint64      { return l.meta.Token }
func (l *SlotLease) Owner() string      { return l.meta.Owner }
func (l *SlotLease) Granted() time.Time { return l.granted }

// Alerts implements lock.Lease: a local break pokes the holding process
// instead (poke.go), which the runner turns into a renewal at once.
func (l *SlotLease) Alerts() <-chan struct{} { return nil }

// Hold implements lock.Lease, as for the mutex (Lease.Hold): a flock dies
// with its process, so the hold is recorded in the slot's sidecar (mode
// and RenewedAt+d) and both flocks are let go. Acquirers (scanSlots),
// Inspect and a mutex acquirer (heldSlot) honour an unexpired hold; the
// record is written before the flocks go, so none of them sees the slot
// free in between.
func (l *SlotLease) Hold(ctx context.Context, d time.Duration, mode string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	ours, err := l.record().release(ctx, func() error {
		m := l.meta
		m.Hold, m.RenewedAt, m.TTLms = mode, time.Now(), max(d.Milliseconds(), 1)
		err := writeSlotMeta(l.metaPath, m)
		if err == nil {
			l.meta = m
		}
		return err
	}, func() {
		unlockClose(l.f)
		unlockClose(l.mode)
		l.f, l.mode = nil, nil
	})
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	return nil
}

// Handle implements lock.Lease.
func (l *SlotLease) Handle() lock.Handle {
	return lock.Handle{Key: l.meta.Key, Owner: l.meta.Owner, Token: l.meta.Token, TTLms: l.meta.TTLms}
}

// Slot implements lock.Slotted.
func (l *SlotLease) Slot() int { return l.meta.Slot }

// LockFiles implements lock.FileLocked: the slot's lock file (held
// exclusively) and the key's mutex lock file (held shared, which keeps
// mutex acquirers out).
func (l *SlotLease) LockFiles() []*os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return []*os.File{l.f, l.mode}
}

func (l *SlotLease) record() ownRecord {
	return ownRecord{key: l.meta.Key, owner: l.meta.Owner, token: l.meta.Token, path: l.metaPath, lockPath: l.recLock}
}

// Renew implements lock.Lease: as for the mutex (Lease.Renew), the flock
// cannot expire; renewing checks under the record lock that the slot was
// not broken and records the renewal, and a record that cannot be written
// does not cost the slot.
func (l *SlotLease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	m := l.meta
	m.RenewedAt = time.Now()
	unwritten, err := l.record().renew(ctx, func() error { return writeSlotMeta(l.metaPath, m) })
	if err != nil {
		return err
	}
	l.warned.note(l.log, m.Key, unwritten)
	if unwritten == nil {
		l.meta.RenewedAt = m.RenewedAt // this field only: Key() and Token() read the others unlocked
	}
	return nil
}

// Release implements lock.Lease: the flocks are always let go;
// lock.ErrNotHeld says the slot had been broken meanwhile. As for the
// mutex, a sidecar that cannot be removed is left behind with a warning.
func (l *SlotLease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return lock.ErrNotHeld
	}
	var rmErr error
	ours, err := l.record().release(ctx, func() error {
		rmErr = os.Remove(l.metaPath)
		return nil
	}, func() {
		unlockClose(l.f)
		unlockClose(l.mode)
		l.f, l.mode = nil, nil
	})
	if rmErr != nil {
		l.log.Warn("released the slot, but cannot remove its record (it names no holder now)", "key", l.meta.Key, "error", rmErr)
	}
	if err != nil {
		return err
	}
	if !ours {
		return lock.ErrNotHeld
	}
	return nil
}
