package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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

// read reads the record of s, made with none, for key.
func (s slotHolder) read(key string) slotHolder {
	if m, ok, _ := readMeta(s.path); ok && m.Key == key {
		s.m, s.ok = m, true
	}
	return s
}

// kept reports whether s's record keeps it by an unexpired hold (min-hold,
// handle): no process holds its flock then.
func (s slotHolder) kept() bool { return s.ok && s.m.heldWithoutProcess(time.Now()) }

// seenLimit is what s tells of its holder's --limit, as far as its record
// and slot tell (a mutex's: 1): a bound only for a slot holder whose record
// does not state it (gone: broken, not yet let go).
func (s slotHolder) seenLimit() lock.SeenLimit {
	if s.mutex {
		return lock.SeenLimit{Have: 1}
	}
	return lock.SeenLimit{Have: max(2, s.m.Limit, s.slot+1), Bound: s.m.Limit == 0}
}

// describe is the holders of key in held, in held's order: a slot seen
// without a record (broken, not let go yet) as a holder unknown.
func describe(key string, held []slotHolder) []lock.Holder {
	now := time.Now()
	out := make([]lock.Holder, len(held))
	for i, s := range held {
		out[i] = lock.Holder{Key: key, ExpiresIn: -1}
		if s.ok {
			out[i] = s.m.holder(now)
		}
		if !s.mutex { // a mutex's holder has Limit and Slot 0
			out[i].Slot, out[i].Limit = s.slot, s.seenLimit().Have
		}
	}
	return out
}

// Inspect implements lock.Backend: the holder, or a semaphore's oldest
// holder (lowest token); InspectSlots gives them all.
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	return lock.InspectOldest(ctx, key, b.InspectSlots)
}

// InspectSlots implements lock.SlotInspector: every held slot of key, by
// slot, or the mutex's holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	held, _, _, err := b.scan(ctx, key, 0)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	return describe(key, held), nil
}

// List implements lock.Backend by scanning the lock directory for records:
// one that is a key's own (ownSidecar, not a copy or a foreign file) names
// a key to Inspect, which lists it when it is held right now. A record
// whose flock is free and that keeps no hold was left by a holder that
// died: the kernel dropped its flock, and it is not listed.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	ents, err := os.ReadDir(b.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable("read lock directory "+b.dir, err)
	}
	start := escapePrefix(b.prefix) + "#"
	var keys []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, start) || !strings.HasSuffix(name, ".json") || !e.Type().IsRegular() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// A record gone since the directory was read was released.
		if m, ok, err := readMeta(filepath.Join(b.dir, name)); err == nil && ok && ownSidecar(baseName(b.prefix, m.Key), name) {
			keys = append(keys, m.Key)
		}
	}
	return lock.ListInspected(ctx, keyPrefix, keys, b.Inspect)
}

// slotRecord is the rest of a slot record's name after its key's base.
var slotRecord = regexp.MustCompile(`^#slot[0-9]+\.json$`)

// ownSidecar reports whether name is the mutex record "<base>.json" or a
// slot record "<base>#slot<i>.json" of the key whose base name is base.
func ownSidecar(base, name string) bool {
	rest, ok := strings.CutPrefix(name, base)
	return ok && (rest == ".json" || slotRecord.MatchString(rest))
}

// Break implements lock.Backend, for every limit. A flock belongs to its
// holder's process and cannot be taken from it: break removes the record
// that names the holder and pokes the holding distlock (poke.go), whose
// renewer then finds the lease gone, stops its child and lets go.
//
// Which holders a token breaks, and the answer, are lock.BreakHolders'.
// Each removal is a compare-and-delete under the key's record lock
// (removeRecord, record.go): never the next holder's record. Only a
// semaphore slot with a holder record is held: one seen without (broken
// already, its process not gone yet; a new holder writes its record under
// the short flock the scan takes too) is neither broken nor named, so a
// second break answers lock.ErrNotHeld. A mutex broken already is
// answered as broken, with no holder named (break says so).
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	held, _, _, err := b.scan(ctx, key, 0)
	if err != nil {
		return lock.Holder{}, err
	}
	held = slices.DeleteFunc(held, func(s slotHolder) bool { return !s.mutex && !s.ok })
	return lock.BreakHolders(key, describe(key, held), token, func(i int) (bool, error) {
		s := held[i]
		removed, err := b.removeRecord(ctx, key, s)
		if removed {
			b.pokeHolder(s.m)
		}
		return removed, err
	})
}
