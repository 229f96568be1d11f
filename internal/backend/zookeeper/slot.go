package zookeeper

// A semaphore's slot nodes, <key node>/slot-<i>: ephemeral, data the
// claimer's nonce, made with data version 0 and never written. Their names
// are reused, so a slot node read as ours and then deleted at the version
// read may be another's made since (ours deleted by a break or with our
// session, the number claimed again): the delete would free a slot while
// its holder runs, and a third contender could take that number too.
// So every claim bumps the key node's data version in the same multi as
// its create (the key node's data and version serve nothing else), and a
// remover reads that version before the slot node and deletes it in one
// multi with a check of it: any slot claimed in between fails the check.
//
// A key node removed once empty (tidy, or the server's sweep of empty
// containers) and made again starts its version at 0 again. The check
// could then pass against another node if, between a remover's reads and
// its delete, its slot node went without it (its session expired, or a
// break), every other node of the key went, the key node was removed and
// made again, and exactly as many slots were claimed in the new one as in
// the old, ours among them. A break (breakOps) cannot meet that: the
// holder's lock node (a name never made twice), deleted at its version in
// the same multi, kept the key node from being removed throughout. A
// give-back can, but only through that whole chain of events between its
// reads and its delete (a few round trips; longer if its connection
// stalls): left open, as closing it needs a guard node never removed,
// a new node in every key's layout.

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// slotAttempts bounds how often giveBack reads a slot node again because
// another was claimed between its read and its delete.
const slotAttempts = 5

// createSlot makes the slot node path in dir (the key's node) for nonce,
// bumping dir's version in the same multi.
func (s *session) createSlot(ctx context.Context, dir, path, nonce string) error {
	_, err := s.multi(ctx, &zk.CreateRequest{Path: path, Data: []byte(nonce), Acl: acl, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: dir, Version: -1})
	return err
}

// slotRead is a slot node as a remover read it: what deletes it only if
// it is still that node (no slot was claimed since dirVersion was read).
type slotRead struct {
	dir, path  string
	dirVersion int32 // the key node's version, read before the slot node
	version    int32 // the slot node's
}

// readSlot reads dir's version, then the slot node path in it; ok is
// false when that is gone or not nonce's.
func readSlot(ctx context.Context, s *session, dir, path, nonce string) (r slotRead, ok bool, err error) {
	ok, st, err := s.exists(ctx, dir)
	if err != nil || !ok {
		return r, false, err
	}
	d, ok, err := s.get(ctx, path)
	if err != nil || !ok || string(d.raw) != nonce {
		return r, false, err
	}
	return slotRead{dir: dir, path: path, dirVersion: st.Version, version: d.stat.Version}, true, nil
}

// deletes is the ops of a multi that deletes the slot node read, failing
// (zk.ErrBadVersion) if any slot was claimed since.
func (r slotRead) deletes() []any {
	return []any{&zk.CheckVersionRequest{Path: r.dir, Version: r.dirVersion},
		&zk.DeleteRequest{Path: r.path, Version: r.version}}
}

// giveBack deletes the slot node at path if it is still ours (its data
// our nonce), as read (slotRead): the node our session made goes with that
// session or a break, and another contender may have made the slot its
// own since. Gone, or another's: nothing to do. Another slot claimed
// meanwhile: read again (slotAttempts).
func (c *contender) giveBack(ctx context.Context, path string) error {
	for attempt := 1; ; attempt++ {
		r, ok, err := readSlot(ctx, c.s, c.dir, path, c.nonce)
		if err != nil || !ok {
			return err
		}
		err = c.dropSlot(ctx, r)
		switch {
		case !errors.Is(err, zk.ErrBadVersion):
			return err
		case attempt >= slotAttempts:
			return fmt.Errorf("the slots of %s kept changing", c.req.Key)
		}
	}
}

// dropSlot deletes the slot node r read if it still is that node: nil
// when it is gone, zk.ErrBadVersion when a slot was claimed since the read.
func (c *contender) dropSlot(ctx context.Context, r slotRead) error {
	_, err := c.s.multi(ctx, r.deletes()...)
	return ignore(err, zk.ErrNoNode)
}
