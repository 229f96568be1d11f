package zookeeper

// A key's line, as read by every caller: its entries in order, each one's
// record, the holders (the first limit entries) and what they tell
// inspect, list, break and waitqueue.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// entry is one contender in a key's line: its lock node (while its
// process holds a session) and/or its hold node (once held with no
// process), which share its nonce and its sequence number.
type entry struct {
	nonce string
	seq   int64
	limit int
	lock  string // lock node name, "" if none
	hold  string // newest hold node name, "" if none
	gen   int    // generation of hold
}

// node returns the entry's node that stands for it: the lock node while
// there is one, else the hold node.
func (e entry) node() string {
	if e.lock != "" {
		return e.lock
	}
	return e.hold
}

func lockPrefix(limit int, nonce string) string {
	return fmt.Sprintf("lock-%d-%s-", limit, nonce)
}

func holdName(limit int, nonce string, gen int, seq int64) string {
	return fmt.Sprintf("hold-%d-%s-%d-%010d", limit, nonce, gen, seq)
}

func slotName(i int) string { return "slot-" + strconv.Itoa(i) }

// parseLine orders the children of a key's node into its line (by
// sequence number). Slot nodes and foreign names are left out.
func parseLine(children []string) []entry {
	byNonce := map[string]*entry{}
	for _, name := range children {
		parts := strings.Split(name, "-")
		gen, err := 0, error(nil)
		switch {
		case parts[0] == "lock" && len(parts) == 4:
		case parts[0] == "hold" && len(parts) == 5:
			gen, err = strconv.Atoi(parts[3])
		default:
			continue
		}
		limit, err1 := strconv.Atoi(parts[1])
		seq, err2 := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if err != nil || err1 != nil || err2 != nil || limit < 1 || parts[2] == "" {
			continue
		}
		p := byNonce[parts[2]]
		if p == nil {
			p = &entry{nonce: parts[2], seq: seq, limit: limit}
			byNonce[p.nonce] = p
		}
		if parts[0] == "lock" {
			p.lock = name
		} else if p.hold == "" || gen > p.gen {
			p.hold, p.gen = name, gen
		}
	}
	line := make([]entry, 0, len(byNonce))
	for _, e := range byNonce {
		line = append(line, *e)
	}
	slices.SortFunc(line, func(a, b entry) int {
		if a.seq != b.seq {
			return int(a.seq - b.seq)
		}
		return strings.Compare(a.nonce, b.nonce)
	})
	return line
}

// seqOf is the sequence number at the end of a node's name.
func seqOf(name string) int64 {
	n, err := strconv.ParseInt(name[max(len(name)-10, 0):], 10, 64)
	if err != nil || len(name) < 10 {
		return -1
	}
	return n
}

// children lists dir on s, with dir's cversion, which every create and
// delete of a child raises; a missing dir is an empty line (cversion -1).
func (b *Backend) children(ctx context.Context, s *session, dir string) ([]string, int32, error) {
	names, st, err := call2(ctx, func() ([]string, *zk.Stat, error) { return s.conn.Children(dir) })
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return names, st.Cversion, nil
}

// described is a node read for its holder's description.
type described struct {
	rec  record
	raw  []byte
	stat *zk.Stat
}

// read gets a node's data and stat; ok is false when it is gone.
func (b *Backend) read(ctx context.Context, s *session, path string) (described, bool, error) {
	data, stat, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.conn.Get(path) })
	if errors.Is(err, zk.ErrNoNode) {
		return described{}, false, nil
	}
	if err != nil {
		return described{}, false, err
	}
	return described{rec: decodeRecord(data), raw: data, stat: stat}, true, nil
}

// holdExpiry is when (server ms) a hold node stops holding: its mtime plus
// the hold's length.
func holdExpiry(d described) int64 { return d.stat.Mtime + d.rec.HoldMs }

// holderOf describes the entry e of key, read as d.
func holderOf(key string, e entry, d described, now time.Time) lock.Holder {
	// A session's time left is the server's alone to know: ExpiresIn -1.
	h := d.rec.Holder(key)
	h.Token = d.rec.Token // 0 for a contender still waiting (contend.go)
	if e.lock != "" && d.rec.Hold == "" {
		return h
	}
	h.Hold = d.rec.Hold
	h.ExpiresIn = max(time.UnixMilli(holdExpiry(d)).Sub(now), 0)
	return h
}

// holders reads key's line and describes its holders: the first limit
// entries (the limit of the first). Holds that have expired by this
// machine's clock are passed over: they hold no more, whether or not
// anyone has deleted them yet.
func (b *Backend) holders(ctx context.Context, s *session, key string) ([]entry, []described, error) {
	dir := b.keyDir(key)
	for attempt := 0; ; attempt++ {
		names, _, err := b.children(ctx, s, dir)
		if err != nil {
			return nil, nil, b.opError("read "+key, err)
		}
		var es []entry
		var ds []described
		changed, now := false, time.Now()
		for _, e := range parseLine(names) {
			if len(es) > 0 && len(es) >= es[0].limit {
				break
			}
			d, ok, err := b.read(ctx, s, dir+"/"+e.node())
			if err != nil {
				return nil, nil, b.opError("read "+key, err)
			}
			if changed = !ok; changed {
				break
			}
			if e.lock != "" || now.Before(time.UnixMilli(holdExpiry(d))) {
				es, ds = append(es, e), append(ds, d) // an expired hold holds no more
			}
		}
		if !changed || attempt >= 3 {
			return es, ds, nil
		}
	}
}

// holderList describes key's holders in line order (nil: none), a
// semaphore's with its limit and slot.
func (b *Backend) holderList(ctx context.Context, key string) ([]lock.Holder, error) {
	if err := lock.ValidateKey(key); err != nil {
		return nil, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	es, ds, err := b.holders(ctx, s, key)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	now := time.Now()
	out := make([]lock.Holder, len(es))
	for i, e := range es {
		out[i] = holderOf(key, e, ds[i], now)
		if ds[i].rec.Limit > 1 {
			out[i].Limit, out[i].Slot = ds[i].rec.Limit, ds[i].rec.Slot
		}
	}
	return out, nil
}

// Inspect reports the holder of key: the first in its line (a
// semaphore's oldest holder).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	hs, err := b.holderList(ctx, key)
	if err != nil || len(hs) == 0 {
		return lock.Holder{}, false, err
	}
	return hs[0], true, nil
}

// InspectSlots implements lock.SlotInspector: every holder in key's line,
// by slot; a mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	hs, err := b.holderList(ctx, key)
	slices.SortFunc(hs, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return hs, err
}

// List walks <prefix>'s children: one row per held key, each described
// by Inspect (lock.ListInspected).
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	names, _, err := b.children(ctx, s, b.root)
	if err != nil {
		return nil, b.opError("list "+b.root, err)
	}
	var keys []string
	for _, name := range names {
		if strings.Contains(name, "#") {
			continue // a key's token counter or ledger, not a key
		}
		if key, err := url.PathUnescape(name); err == nil {
			keys = append(keys, key)
		}
	}
	return lock.ListInspected(ctx, keyPrefix, keys, b.Inspect)
}

// QueueLen is how many waiters are in line for key: the contenders behind
// the first limit places (those hold). A dead waiter keeps its place until
// the server expires its session (its --ttl).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	if err := lock.ValidateKey(key); err != nil {
		return 0, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	names, _, err := b.children(ctx, s, b.keyDir(key))
	if err != nil {
		return 0, b.opError("count the waiters of "+key, err)
	}
	var n int64
	line := parseLine(names)
	for i, e := range line {
		if i >= line[0].limit && e.lock != "" {
			n++
		}
	}
	return n, nil
}

// Break deletes key's holder (with token != 0 only the holder with that
// token; without, every holder of a semaphore), compare-and-delete
// (breakOne). The holder's watch on its own node tells it at once. It
// answers, as Inspect does, by the first in line, not by lock.Oldest
// (lock.BreakHolders): a semaphore's holders take their tokens each on its
// own, so the first in line may have a higher token than one behind it, or
// none yet.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	if err := lock.ValidateKey(key); err != nil {
		return lock.Holder{}, err
	}
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return lock.Holder{}, err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		es, ds, err := b.holders(ctx, s, key)
		if err != nil {
			return lock.Holder{}, err
		}
		if len(es) == 0 {
			return lock.Holder{}, fmt.Errorf("%s is not locked: %w", key, lock.ErrNotHeld)
		}
		now := time.Now()
		var broke []lock.Holder
		conflict := false
		for i, e := range es {
			h := holderOf(key, e, ds[i], now)
			if token != 0 && h.Token != token {
				continue
			}
			switch err := b.breakOne(ctx, s, b.keyDir(key), e, ds[i]); {
			case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
				conflict = true
			case err != nil:
				return h, b.opError("break "+key, err)
			default:
				broke = append(broke, h)
			}
		}
		first := holderOf(key, es[0], ds[0], now)
		switch {
		case len(broke) > 0:
			b.tidy(ctx, s, b.keyDir(key))
			return broke[0], nil
		case !conflict:
			return first, &lock.BusyError{Holder: first}
		case attempt >= 3:
			return first, b.opError("break "+key, errors.New("the holder keeps changing; try again"))
		}
	}
}

// breakOne deletes the entry e of a line in dir, read as d, with the
// version it was read at, in one multi with a lock node's slot node (if
// it is still that holder's) and any hold node beside it.
func (b *Backend) breakOne(ctx context.Context, s *session, dir string, e entry, d described) error {
	ops := []any{&zk.DeleteRequest{Path: dir + "/" + e.node(), Version: d.stat.Version}}
	if e.lock != "" && d.rec.Limit > 1 {
		slot := dir + "/" + slotName(d.rec.Slot)
		if sd, ok, err := b.read(ctx, s, slot); err == nil && ok && string(sd.raw) == e.nonce {
			ops = append(ops, &zk.DeleteRequest{Path: slot, Version: sd.stat.Version})
		}
	}
	if e.lock != "" && e.hold != "" {
		ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + e.hold, Version: -1})
	}
	_, err := multi(ctx, s, ops...)
	return err
}
