package zookeeper

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// InspectSlots implements lock.SlotInspector: every holder in key's line
// (holders), by slot; a mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
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
		out[i] = withSlot(holderOf(key, e, ds[i], now), ds[i])
	}
	slices.SortFunc(out, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return out, nil
}

// withSlot marks a semaphore's holder with its limit and slot.
func withSlot(h lock.Holder, d described) lock.Holder {
	if d.rec.Limit > 1 {
		h.Limit, h.Slot = d.rec.Limit, d.rec.Slot
	}
	return h
}

// claimSlot claims a free slot-<i> node for us (-1: none is free). A
// session holder's slot is its ephemeral slot-<i> node; a held slot (a hold
// node, with no session) has none, only the Slot in its record. So slots
// named by hold nodes are passed over, and a slot node we made is checked
// against the hold nodes once more after it was made: a holder that made
// its hold (which it does before deleting its slot node) after our read
// of the line is seen then, and we give that slot back.
func (c *contender) claimSlot(ctx context.Context, line []entry) (int, error) {
	used, err := c.heldSlots(ctx, line)
	if err != nil {
		return -1, err
	}
	for i := range c.limit {
		if used[i] {
			continue
		}
		path := c.dir + "/" + slotName(i)
		err := do(ctx, func() error {
			_, err := c.s.conn.Create(path, []byte(c.nonce), zk.FlagEphemeral, acl)
			return err
		})
		if errors.Is(err, zk.ErrNodeExists) {
			// Ours, from a try whose answer was lost?
			d, ok, rerr := c.b.read(ctx, c.s, path)
			if rerr != nil || !ok || string(d.raw) != c.nonce {
				continue
			}
			err = nil
		}
		if err != nil {
			return -1, c.b.opError("take a slot of "+c.req.Key, err)
		}
		names, err := c.b.children(ctx, c.s, c.dir)
		if err == nil {
			used, err = c.heldSlots(ctx, parseLine(names))
		}
		if err != nil {
			_ = do(context.WithoutCancel(ctx), func() error { return c.s.conn.Delete(path, -1) })
			return -1, c.b.opError("read the line of "+c.req.Key, err)
		}
		if used[i] {
			if err := do(ctx, func() error { return c.s.conn.Delete(path, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return -1, c.b.opError("give back a slot of "+c.req.Key, err)
			}
			continue
		}
		return i, nil
	}
	return -1, nil
}

// heldSlots reads the slots of the hold nodes in line (other than ours).
func (c *contender) heldSlots(ctx context.Context, line []entry) (map[int]bool, error) {
	used := map[int]bool{}
	for _, e := range line {
		if e.hold == "" || e.nonce == c.nonce {
			continue
		}
		d, ok, err := c.b.read(ctx, c.s, c.dir+"/"+e.hold)
		if err != nil {
			return nil, c.b.opError("read the hold on "+c.req.Key, err)
		}
		if ok {
			used[d.rec.Slot] = true
		}
	}
	return used, nil
}
