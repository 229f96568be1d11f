package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// holders reads key's line and describes its holders: the first limit
// entries (the limit of the first). Holds that have expired by this
// machine's clock are passed over: they hold no more, whether or not
// anyone has deleted them yet.
func (b *Backend) holders(ctx context.Context, s *session, key string) ([]entry, []described, error) {
	dir := b.keyDir(key)
	for attempt := 0; ; attempt++ {
		names, err := b.children(ctx, s, dir)
		if err != nil {
			return nil, nil, b.opError("read "+key, err)
		}
		var es []entry
		var ds []described
		changed := false
		now := time.Now()
		for _, e := range parseLine(names) {
			if len(es) > 0 && len(es) >= es[0].limit {
				break
			}
			d, ok, err := b.read(ctx, s, dir+"/"+e.node())
			if err != nil {
				return nil, nil, b.opError("read "+key, err)
			}
			if !ok {
				changed = true
				break
			}
			if e.lock == "" && !now.Before(time.UnixMilli(holdExpiry(d))) {
				continue
			}
			es, ds = append(es, e), append(ds, d)
		}
		if !changed || attempt >= 3 {
			return es, ds, nil
		}
	}
}

// Inspect reports the holder of key: the first in its line (a
// semaphore's oldest holder).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	if err := lock.ValidateKey(key); err != nil {
		return lock.Holder{}, false, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return lock.Holder{}, false, err
	}
	defer done()
	es, ds, err := b.holders(ctx, s, key)
	if err != nil || len(es) == 0 {
		return lock.Holder{}, false, err
	}
	return withSlot(holderOf(key, es[0], ds[0], time.Now()), ds[0]), true, nil
}

// List walks <prefix>'s children: one row per held key.
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	names, err := b.children(ctx, s, b.root)
	if err != nil {
		return nil, b.opError("list "+b.root, err)
	}
	var out []lock.Holder
	for _, name := range names {
		if strings.Contains(name, "#") {
			continue // a key's token counter (token.go), not a key
		}
		key, err := url.PathUnescape(name)
		if err != nil || !strings.HasPrefix(key, keyPrefix) || lock.ValidateKey(key) != nil {
			continue
		}
		h, held, err := b.Inspect(ctx, key)
		if err != nil {
			return nil, err
		}
		if held {
			out = append(out, h)
		}
	}
	lock.SortHolders(out)
	return out, nil
}

// Break deletes key's holder (with token != 0 only the holder with that
// token; without, every holder of a semaphore), compare-and-delete: a lock
// node is deleted with the version it was read at, in one multi with its
// slot node. The holder's watch on its own node tells it at once.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	if err := lock.ValidateKey(key); err != nil {
		return lock.Holder{}, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return lock.Holder{}, err
	}
	defer done()
	dir := b.keyDir(key)
	for attempt := 0; ; attempt++ {
		es, ds, err := b.holders(ctx, s, key)
		if err != nil {
			return lock.Holder{}, err
		}
		if len(es) == 0 {
			return lock.Holder{}, fmt.Errorf("%s is not locked: %w", key, lock.ErrNotHeld)
		}
		now := time.Now()
		first := holderOf(key, es[0], ds[0], now)
		var broke *lock.Holder
		conflict := false
		for i, e := range es {
			h := holderOf(key, e, ds[i], now)
			if token != 0 && h.Token != token {
				continue
			}
			ops := []any{&zk.DeleteRequest{Path: dir + "/" + e.node(), Version: ds[i].stat.Version}}
			if e.lock != "" && ds[i].rec.Limit > 1 {
				if sd, ok, err := b.read(ctx, s, dir+"/"+slotName(ds[i].rec.Slot)); err == nil && ok && string(sd.raw) == e.nonce {
					ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + slotName(ds[i].rec.Slot), Version: sd.stat.Version})
				}
			}
			if e.lock != "" && e.hold != "" {
				ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + e.hold, Version: -1})
			}
			err := multi(ctx, s, ops...)
			if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
				conflict = true
				continue
			}
			if err != nil {
				return h, b.opError("break "+key, err)
			}
			if broke == nil {
				broke = &h
			}
		}
		if broke != nil {
			b.tidy(ctx, s, dir)
			return *broke, nil
		}
		if !conflict {
			return first, &lock.BusyError{Holder: first}
		}
		if attempt >= 3 {
			return first, b.opError("break "+key, errors.New("the holder keeps changing; try again"))
		}
	}
}
