package zookeeper

// A key's line: its nodes' names, the entries they make in order, and the
// holders (the first limit entries) as status, list, break, resume and
// waitqueue read them.

import (
	"cmp"
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

// keyDir is the node under which every contender of key lives.
func (b *Backend) keyDir(key string) string { return b.root + "/" + escapeName(key) }

// escapeName makes s one valid node name: url.PathEscape encodes '/',
// '%' and every non-ASCII byte; "." and ".." are spelled out.
func escapeName(s string) string {
	e := url.PathEscape(s)
	if e == "." || e == ".." {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

// entry is one contender in a key's line: its lock node (while its
// process holds a session) and/or its hold node (once held with no
// process), which share its nonce and its sequence number.
type entry struct {
	nonce string
	seq   int64
	limit int
	lock  string   // lock node name, "" if none: the lowest-numbered of the nonce's
	extra []string // the nonce's other lock nodes, in order (a create retried: takePlace)
	hold  string   // newest hold node name, "" if none
	gen   int      // generation of hold
}

// node is the entry's node that stands for it: the lock node while there
// is one, else the hold node.
func (e entry) node() string { return cmp.Or(e.lock, e.hold) }

// hasLock: name is one of the entry's lock nodes.
func (e entry) hasLock(name string) bool {
	return name != "" && (e.lock == name || slices.Contains(e.extra, name))
}

func lockPrefix(limit int, nonce string) string { return fmt.Sprintf("lock-%d-%s-", limit, nonce) }

func holdName(limit int, nonce string, gen int, seq int64) string {
	return fmt.Sprintf("hold-%d-%s-%d-%010d", limit, nonce, gen, seq)
}

func slotName(i int) string { return "slot-" + strconv.Itoa(i) }

// lineNode is one lock or hold node of a key's line, its name read.
type lineNode struct {
	name, nonce string
	hold        bool
	limit, gen  int
	seq         int64
}

// parseNode reads a child's name as a lock or hold node (ok false: a
// slot node, or a foreign name).
func parseNode(name string) (n lineNode, ok bool) {
	parts := strings.Split(name, "-")
	var err error
	switch {
	case parts[0] == "lock" && len(parts) == 4:
	case parts[0] == "hold" && len(parts) == 5:
		n.hold = true
		n.gen, err = strconv.Atoi(parts[3])
	default:
		return n, false
	}
	limit, err1 := strconv.Atoi(parts[1])
	seq, err2 := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil || err1 != nil || err2 != nil || limit < 1 || parts[2] == "" {
		return n, false
	}
	n.name, n.nonce, n.limit, n.seq = name, parts[2], limit, seq
	return n, true
}

// parseLine orders the children of a key's node into its line (by
// sequence number). Slot nodes and foreign names are left out.
//
// One contender may have two lock nodes: a create whose answer was lost
// made one that takePlace's check did not see yet (another server's
// read), and it made another. Every reader must then find it at the same
// place, whatever order the server lists them in: the nodes are merged
// in the order of their numbers, so a contender's place is its lowest
// lock node's (or its hold's, which keeps the number of the place it was
// made for), and its others are extra. That place is the one it had
// first and never moves while that node is there (a node made later has
// a higher number); the contender takes it as its own and deletes the
// extra ones (Look).
func parseLine(children []string) []entry {
	var nodes []lineNode
	for _, name := range children {
		if n, ok := parseNode(name); ok {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(a, b lineNode) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), strings.Compare(a.name, b.name))
	})
	var line []entry
	at := map[string]int{} // nonce: its index in line
	for _, n := range nodes {
		i, ok := at[n.nonce]
		if !ok {
			i, at[n.nonce] = len(line), len(line)
			line = append(line, entry{nonce: n.nonce, seq: n.seq, limit: n.limit})
		}
		e := &line[i]
		switch {
		case !n.hold && e.lock == "":
			e.lock = n.name
		case !n.hold:
			e.extra = append(e.extra, n.name)
		case e.hold == "" || n.gen > e.gen:
			e.hold, e.gen = n.name, n.gen
		}
	}
	return line
}

// holdExpiry is when (server ms) a hold node stops holding: its mtime plus
// the hold's length.
func holdExpiry(d described) int64 { return d.stat.Mtime + d.rec.HoldMs }

// holding is one of a key's holders as read: its entry and its node.
type holding struct {
	entry
	described
}

// holdersRead is one reading of the nodes of some entries of a key's line
// (readHolders).
type holdersRead struct {
	hs      []holding     // in line order: the lock nodes, and the holds live by the clock
	expired []holding     // the holds whose time is up by the clock
	gone    []entry       // the entries whose node went since the line was read
	left    time.Duration // the least time left of the live holds (-1: none)
}

// readHolders reads the node that stands for each entry of line (its lock
// node while it has one, else its hold node), all at once, and judges the
// holds among them by clock (ms: the server's, or this machine's; nil:
// none has expired), read once the nodes are, if one is a live hold. A
// hold lives until its mtime plus its length.
func (b *Backend) readHolders(ctx context.Context, s *session, key string, line []entry, clock func(context.Context) (int64, error)) (holdersRead, error) {
	ds, err := getAll(ctx, s, line, func(e entry) string { return b.keyDir(key) + "/" + e.node() })
	if err != nil {
		return holdersRead{}, b.opError("read "+key, err)
	}
	r, now := holdersRead{left: -1}, int64(-1) // now: read at the first live hold
	for i, e := range line {
		h := holding{e, ds[i]}
		if h.stat == nil {
			r.gone = append(r.gone, e)
			continue
		}
		if e.lock == "" && clock != nil && now < 0 {
			if now, err = clock(ctx); err != nil {
				return holdersRead{}, err
			}
		}
		left := time.Duration(holdExpiry(h.described)-now) * time.Millisecond
		switch {
		case e.lock != "" || clock == nil:
			r.hs = append(r.hs, h)
		case left <= 0:
			r.expired = append(r.expired, h)
		default:
			r.hs = append(r.hs, h)
			if r.left < 0 || left < r.left {
				r.left = left
			}
		}
	}
	return r, nil
}

// describeAll describes the holders hs of key (lock.Record.Describe). A
// session's time left is the server's alone to know (ExpiresIn -1); a
// hold's is its expiry's.
func describeAll(key string, hs []holding) []lock.Holder {
	var out []lock.Holder
	now := time.Now()
	for _, h := range hs {
		s := lock.Seat{Token: h.rec.Token, Hold: h.rec.Hold, Limit: h.rec.Limit, Slot: h.rec.Slot}
		if h.lock == "" || h.rec.Hold != "" {
			s.HoldEnd = time.UnixMilli(holdExpiry(h.described))
		}
		out = append(out, h.rec.Describe(key, s, now))
	}
	return out
}

// lineOf reads key's line and its version (the key node's cversion, which
// every create and delete of a child raises); op names the read in an
// error.
func (b *Backend) lineOf(ctx context.Context, s *session, key, op string) ([]entry, int32, error) {
	names, cv, err := s.children(ctx, b.keyDir(key))
	if err != nil {
		return nil, cv, b.opError(op+key, err)
	}
	return parseLine(names), cv, nil
}

// holders reads key's holders: the first limit entries of its line (the
// limit of the first). Holds that have expired by this machine's clock
// are passed over: they hold no more, whether or not anyone has deleted
// them yet. A node gone meanwhile means the line moved: it is read again.
func (b *Backend) holders(ctx context.Context, s *session, key string) ([]holding, error) {
	for attempt := 0; ; attempt++ {
		line, _, err := b.lineOf(ctx, s, key, "read ")
		if err != nil {
			return nil, err
		}
		if len(line) > 0 {
			line = line[:min(len(line), line[0].limit)]
		}
		r, err := b.readHolders(ctx, s, key, line, func(context.Context) (int64, error) { return time.Now().UnixMilli(), nil })
		if err != nil || len(r.gone) == 0 || attempt >= 3 {
			return r.hs, err
		}
	}
}

// Inspect reports the holder of key: on a semaphore the oldest holder
// (lock.InspectOldest).
func (b *Backend) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	return lock.InspectOldest(ctx, key, b.InspectSlots)
}

// InspectSlots implements lock.SlotInspector: every holder in key's line,
// by slot; a mutex gives its one holder.
func (b *Backend) InspectSlots(ctx context.Context, key string) ([]lock.Holder, error) {
	s, done, err := b.useAdmin(ctx, key)
	if err != nil {
		return nil, err
	}
	defer done()
	hs, err := b.holders(ctx, s, key)
	out := describeAll(key, hs)
	slices.SortFunc(out, func(a, b lock.Holder) int { return a.Slot - b.Slot })
	return out, err
}

// List walks <prefix>'s children: one row per held key, each described
// by Inspect (lock.ListInspected).
func (b *Backend) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	s, done, err := b.useAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	names, _, err := s.children(ctx, b.root)
	if err != nil {
		return nil, b.opError("list "+b.root, err)
	}
	var keys []string
	for _, name := range names {
		if key, err := url.PathUnescape(name); err == nil && !strings.Contains(name, "#") {
			keys = append(keys, key) // not a key's token counter or ledger
		}
	}
	return lock.ListInspected(ctx, keyPrefix, keys, b.Inspect)
}

// QueueLen is how many waiters are in line for key: the contenders behind
// the first limit places (those hold). A dead waiter keeps its place until
// the server expires its session (its --ttl).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	s, done, err := b.useAdmin(ctx, key)
	if err != nil {
		return 0, err
	}
	defer done()
	line, _, err := b.lineOf(ctx, s, key, "count the waiters of ")
	var n int64
	for i, e := range line {
		if i >= line[0].limit && e.lock != "" {
			n++
		}
	}
	return n, err
}

// Break implements lock.Backend by lock.BreakAgain over key's holders
// (token 0: every one), each by compare-and-delete (breakOne); the
// holder's watch on its own node tells it at once.
func (b *Backend) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	s, done, err := b.useAdmin(ctx, key)
	if err != nil {
		return lock.Holder{}, err
	}
	defer done()
	h, err := lock.BreakAgain(ctx, key, token, b.breakRead(s, key))
	if err == nil {
		b.tidy(ctx, s, b.keyDir(key))
	}
	return h, err
}

// breakRead is one read of key's holders for Break. A holder whose node
// changed or went since (a hold replaced its node, or a taker read with
// token 0 wrote its token, or a slot was claimed after its slot node was
// read: breakOps) has moved: lock.BreakAgain breaks it again
// after another read (by its token; a taker read with none, in a round
// over every holder).
func (b *Backend) breakRead(s *session, key string) lock.BreakRead {
	return func(ctx context.Context) ([]lock.Holder, func(int) (bool, error), error) {
		hs, err := b.holders(ctx, s, key)
		return describeAll(key, hs), func(i int) (bool, error) {
			switch err := b.breakOne(ctx, s, b.keyDir(key), hs[i]); {
			case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
				return false, lock.ErrMoved
			case err != nil:
				return false, b.opError("break "+key, err)
			}
			return true, nil
		}, err
	}
}

// breakOne deletes the holder h of a line in dir as breakOps read it.
func (b *Backend) breakOne(ctx context.Context, s *session, dir string, h holding) error {
	_, err := s.multi(ctx, b.breakOps(ctx, s, dir, h)...)
	return err
}

// breakOps is one multi that deletes the holder h of a line in dir with
// the version it was read at, with a lock node's slot node if it is still
// that holder's (slotRead: a slot claimed since fails the multi, and the
// holder has moved), and any hold node and extra lock nodes (parseLine)
// beside it: its nonce makes them its own. A holder's slot node
// goes only with its lock node once it has its token, but one still
// taking may give its slot back, which another then claims.
func (b *Backend) breakOps(ctx context.Context, s *session, dir string, h holding) []any {
	ops := []any{&zk.DeleteRequest{Path: dir + "/" + h.node(), Version: h.stat.Version}}
	if h.lock != "" && h.rec.Limit > 1 {
		if r, ok, err := readSlot(ctx, s, dir, dir+"/"+slotName(h.rec.Slot), h.nonce); err == nil && ok {
			ops = append(ops, r.deletes()...)
		}
	}
	if h.lock != "" && h.hold != "" {
		ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + h.hold, Version: -1})
	}
	for _, x := range h.extra { // else the holder stays in line at the next of its places
		ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + x, Version: -1})
	}
	return ops
}
