package file

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// slotHolder is one slot of a key as a scan saw it: a semaphore's slot, or
// the mutex (slot 0 of 1).
type slotHolder struct {
	slot  int
	mutex bool
	path  string // its record
	m     meta
	ok    bool // m was read and names the key (a broken holder has no record until it lets go)
}

// read reads s's record for key.
func (s slotHolder) read(key string) slotHolder {
	m, ok, _ := readMeta(s.path)
	s.m, s.ok = meta{}, ok && m.Key == key
	if s.ok {
		s.m = m
	}
	return s
}

// kept reports whether s's record keeps it by an unexpired hold (min-hold,
// handle): no process holds its flock then.
func (s slotHolder) kept() bool { return s.ok && s.m.heldWithoutProcess(time.Now()) }

func (s slotHolder) holder(key string, now time.Time) lock.Holder {
	h := lock.Holder{Key: key, ExpiresIn: -1}
	if s.ok {
		h = s.m.holder(now)
	}
	if !s.mutex { // a mutex's holder has Limit and Slot 0
		h.Slot, h.Limit = s.slot, max(2, s.m.Limit, s.slot+1)
	}
	return h
}

// probe describes slot s of key, whose lock file is lockPath, and reports
// whether it is held right now: by a process (its flock), or by a hold.
func probe(key, lockPath string, s slotHolder) (slotHolder, bool, error) {
	locked, err := isLocked(lockPath)
	if err != nil {
		return s, false, err
	}
	s = s.read(key)
	return s, locked || s.kept(), nil
}

// oldest is the holder with the lowest fencing token (the one that has held
// longest); holders without a readable record come last.
func oldest(hs []slotHolder) slotHolder {
	best := hs[0]
	for _, h := range hs[1:] {
		if h.ok && (!best.ok || h.m.Token < best.m.Token) {
			best = h
		}
	}
	return best
}

// holders describes who holds key right now, slot by slot: the held slots
// of a semaphore, else the mutex's holder, else nobody.
func (b *Backend) holders(ctx context.Context, key string) ([]slotHolder, error) {
	if held, err := b.semHolders(ctx, key); err != nil || len(held) > 0 {
		return held, err
	}
	lockPath, recordPath := b.keyPaths(key).slot(1, 0)
	s, held, err := probe(key, lockPath, slotHolder{mutex: true, path: recordPath})
	if err != nil || !held {
		return nil, err
	}
	return []slotHolder{s}, nil
}

// Inspect implements lock.Backend: the holder, or a semaphore's oldest
// holder (lowest token). Status shows one holder of a semaphore: the
// oldest, not all of them (InspectSlots gives them all).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	held, err := b.holders(ctx, key)
	if err != nil || len(held) == 0 {
		return lock.Holder{}, false, err
	}
	return oldest(held).holder(key, time.Now()), true, nil
}

// InspectSlots implements lock.SlotInspector: every held slot of key, by
// slot, or the mutex's holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	held, err := b.holders(ctx, key)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	now := time.Now()
	out := make([]lock.Holder, len(held))
	for i, s := range held {
		out[i] = s.holder(key, now) // heldSlots scans slots in order
	}
	return out, nil
}
