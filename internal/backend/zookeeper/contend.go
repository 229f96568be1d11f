package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// Contend implements lock.Backend: lock.Line over the key's line of
// sequential nodes (arrival order); the first limit hold, a mutex being
// the case of one place. A waiter watches only what can make it the next
// to hold (wait.go).
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return lock.NewLine(req, b.contender(req))
}

func (b *Backend) contender(req lock.Request) *contender {
	return &contender{b: b, req: req, limit: limitOf(req), nonce: newNonce(), dir: b.keyDir(req.Key)}
}

// contender is one process's place in a key's line (lock.Line's store),
// on a session of its own whose timeout is the TTL: that session becomes
// the lease.
type contender struct {
	b     *Backend
	req   lock.Request
	limit int
	nonce string
	dir   string

	s         *session
	node      string // our lock node's name; "" before it is made, or once lost
	seq       int64  // its sequence number, as the last Look found it
	attempted bool   // a create was sent whose outcome we do not know
	rec       record

	holds    []holding          // the holds among the holders, as the last Look read them
	counter  <-chan counterRead // the key's token counter, read with it
	watch    []entry            // the entries ahead whose change may make us next (wait.go), at the last Look
	seen     int32              // the line's version (the key node's cversion) at the last Look
	holdLeft time.Duration      // the holders' holds: least time until one may expire (<0: none)
}

// Join implements lock.LineStore: our session on first use, then a node
// at the back of the line (a lost one gets a new one, on the same session).
func (c *contender) Join(ctx context.Context) error {
	if err := c.openSession(ctx); err != nil {
		return err
	}
	return c.takePlace(ctx)
}

// Look implements lock.LineStore: read the line (and the key's token
// counter alongside, in one round trip: if we take over, the grant needs
// it), then the nodes of the other holders (others), whose expired holds
// it deletes (expireHolds); note what Watch is to watch. A busy answer
// names the oldest holder (lock.Oldest).
func (c *contender) Look(ctx context.Context) (lock.LineLook, error) {
	c.counter = c.readCounter(ctx)
	line, mine, err := c.readLine(ctx)
	if err != nil {
		return lock.LineLook{}, err
	}
	if mine < 0 {
		// Our node is gone (our session expired, or a break): join
		// again, at the back.
		c.node, c.attempted = "", false
		return lock.LineLook{Lost: true}, nil
	}
	if extra := line[mine].extra; len(extra) > 0 {
		return lock.LineLook{}, c.dropExtra(ctx, extra)
	}
	var clock func(context.Context) (int64, error)
	if mine <= c.limit {
		clock = c.serverClock // a later waiter leaves the holds to the first
	}
	ahead, err := c.b.readHolders(ctx, c.s, c.req.Key, c.others(line, mine), clock)
	if err == nil && clock != nil {
		err = c.expireHolds(ctx, ahead)
	}
	if err != nil {
		return lock.LineLook{}, err
	}
	c.holds, c.holdLeft, c.watch = ahead.hs, ahead.left, nil
	look := lock.LineLook{Ahead: mine, Free: c.limit}
	if mine >= c.limit {
		c.watch = watchList(line, mine, c.limit)
		if hs := describeAll(c.req.Key, ahead.hs); len(hs) > 0 {
			look.Holder = lock.Oldest(hs) // none: the last one named
		}
	}
	return look, nil
}

// others is what Look reads of the holders (the first limit places, ours
// (mine) aside): every one while we wait behind them, to name the oldest;
// only their holds while we are among them (or mine is -1), to expire
// those and pass over the slots they keep. Holds are only ever among the
// holders: a hold is made by one, and those ahead of it only leave.
func (c *contender) others(line []entry, mine int) []entry {
	var out []entry
	for i, e := range line[:min(len(line), c.limit)] {
		if i != mine && (mine >= c.limit || e.lock == "") {
			out = append(out, e)
		}
	}
	return out
}

// openSession dials our session on the first Join. The session is the
// lease, so it is asked for with the TTL, and a shorter one granted is
// refused; a lease held at once (distlock acquire) only lives as a session
// until Hold makes it a TTL node, so any session will do.
func (c *contender) openSession(ctx context.Context) error {
	if c.s != nil {
		return nil
	}
	timeout := c.req.TTL
	if c.req.HeldAtOnce {
		timeout = min(timeout, adminSession)
	}
	c.b.doneAdmin(0, true) // park it: a run needs one connection, not two (session.go)
	s, err := c.b.dial(ctx, timeout)
	if err != nil {
		return err
	}
	if got := time.Duration(s.negotiated.Load()) * time.Millisecond; got < timeout {
		s.close(time.Second)
		return lock.Invalidf("zookeeper at %s grants sessions of at most %s, shorter than --ttl %s: a lock there lasts only as long as its session; use --ttl %s or less, or raise the servers' maxSessionTimeout (20 ticks by default)",
			c.b.desc, got, c.req.TTL, got)
	}
	c.s = s
	return nil
}

// dropExtra deletes our extra lock nodes (parseLine): our place is our
// lowest one's, which every reader finds; the others would stand in line
// after it once it went. Each name holds our nonce, so it is ours alone,
// whatever it holds. Then the line is read again (lock.ErrLookAgain).
func (c *contender) dropExtra(ctx context.Context, extra []string) error {
	for _, name := range extra {
		if err := ignore(c.s.remove(ctx, c.dir+"/"+name, -1), zk.ErrNoNode); err != nil {
			return c.b.opError("delete an extra node of ours in the line of "+c.req.Key, err)
		}
	}
	return lock.ErrLookAgain
}

// takePlace makes sure we have a node in line: a create whose answer was
// lost may have made it, so that is looked for (by our nonce) before
// ours is made at the back, the key's node first if it is missing (or was
// just removed, being empty). The client may have moved to another
// server since, which need not have applied that create yet: it is
// synced with the leader first (Sync: as Entries does). A create still
// on its way to the leader can land after that read all the same: the
// contender then has two nodes, which parseLine and Look deal with.
func (c *contender) takePlace(ctx context.Context) error {
	if c.node == "" && c.attempted {
		if err := c.s.sync(ctx, c.dir); err != nil {
			return c.b.opError("read the line of "+c.req.Key, err)
		}
		line, _, err := c.b.lineOf(ctx, c.s, c.req.Key, "read the line of ")
		if err != nil {
			return err
		}
		for _, e := range line {
			if e.nonce == c.nonce && e.lock != "" {
				c.node, c.s.sid = e.lock, c.s.conn.SessionID()
			}
		}
		c.attempted = false
	}
	if c.node != "" {
		return nil
	}
	c.rec = newRecord(c.req, time.Now())
	c.rec.SessionMs = int64(c.s.negotiated.Load())
	for attempt := 0; ; attempt++ {
		c.attempted = true
		path, err := c.s.create(ctx, c.dir+"/"+lockPrefix(c.limit, c.nonce), c.rec.encode(), zk.FlagEphemeralSequential)
		if errors.Is(err, zk.ErrNoNode) && attempt < 3 {
			c.attempted = false // the key's node is missing: nothing was made
			if err := c.b.ensureDir(ctx, c.s, c.dir); err != nil {
				return c.b.opError("create "+c.dir, err)
			}
			continue
		}
		if err != nil {
			return c.b.opError("join the line of "+c.req.Key, err)
		}
		// The node lives as long as the session it was made on: if the
		// client replaced an expired session, this is the new one (a
		// later replacement is then the loss of the lease).
		c.node, c.attempted, c.s.sid = path[len(c.dir)+1:], false, c.s.conn.SessionID()
		return nil
	}
}

// readLine reads the line (noting its version for Watch) and finds our
// place in it (-1: our node is not in it, or not as we made it). With
// two lock nodes (parseLine), our place is the lowest one's, as every
// reader finds it: that becomes our node, wherever our last create made
// it. Everyone ahead of us must have asked for our limit (lock.Refuse's
// lock.LimitMismatchError otherwise: exit 64).
func (c *contender) readLine(ctx context.Context) (line []entry, mine int, err error) {
	if line, c.seen, err = c.b.lineOf(ctx, c.s, c.req.Key, "read the line of "); err != nil {
		return nil, -1, err
	}
	var ahead []lock.SeenLimit
	for i, e := range line {
		if e.nonce == c.nonce && e.hasLock(c.node) {
			c.node, c.seq = e.lock, e.seq
			return line, i, lock.Refuse(c.req.Key, c.limit, nil, ahead, false)
		}
		ahead = append(ahead, lock.SeenLimit{Have: e.limit})
	}
	return line, -1, nil
}

// Take implements lock.LineStore: it makes us the holder from the place
// the last Look read. For a semaphore, claim a free slot; then stamp the
// acquisition time and the token on our node with a write (in one multi
// with the key's token counter, read by that Look: grantToken), which also
// proves, through the leader, that our node (so our session) was alive
// after the moment it was sent: the lease's validity counts from that
// moment.
func (c *contender) Take(ctx context.Context) (lock.Lease, error) {
	rec, slot := c.rec, -1
	if c.limit > 1 {
		var err error
		if slot, err = c.claimSlot(ctx); err != nil {
			return nil, err
		}
		if slot < 0 {
			// None free: a holder ahead is leaving (Watch answers "try
			// again at once", and the busy answer names the last holder).
			return nil, &lock.BusyError{}
		}
		rec.Slot = slot
	}
	rec.AcquiredAt = time.Now()
	granted, err := c.grantToken(ctx, &rec)
	switch {
	case errors.Is(err, lock.ErrLookAgain):
		// We lost our place (our session expired): give the slot back,
		// and the next Look finds the place lost.
		if slot >= 0 {
			_ = c.giveBack(ctx, c.dir+"/"+slotName(slot))
		}
		c.node = ""
		return nil, err
	case err != nil:
		return nil, c.b.opError("take "+c.req.Key, err)
	}
	c.rec = rec
	place := entry{nonce: c.nonce, seq: c.seq, limit: c.limit, lock: c.node}
	st := &nodeStore{b: c.b, s: c.s, dir: c.dir, entry: place, rec: rec, alerts: make(chan struct{}, 1)}
	st.watchOwn()
	c.s = nil // the lease owns the session now
	return st.lease(c.req.Key, granted), nil
}

// claimSlot claims a free slot-<i> node for us (-1: none is free). A
// session holder's slot is its ephemeral slot-<i> node; a held slot (a hold
// node, with no session) has none, only the Slot in its record. So slots
// named by hold nodes are passed over, and a slot node we made is checked
// against the hold nodes once more after it was made: a holder that made
// its hold (which it does before deleting its slot node) after Look read
// it is seen then, and we give that slot back. A slot node is made with a
// raise of the key node's version (createSlot, slot.go).
func (c *contender) claimSlot(ctx context.Context) (int, error) {
	used := slotsOf(c.holds)
	for i := range c.limit {
		if used[i] {
			continue
		}
		path := c.dir + "/" + slotName(i)
		err := c.s.createSlot(ctx, c.dir, path, c.nonce)
		if errors.Is(err, zk.ErrNodeExists) {
			// Ours, from a try whose answer was lost?
			if d, ok, rerr := c.s.get(ctx, path); rerr != nil || !ok || string(d.raw) != c.nonce {
				continue
			}
			err = nil
		}
		if err != nil {
			return -1, c.b.opError("take a slot of "+c.req.Key, err)
		}
		if used, err = c.heldSlots(ctx); err != nil {
			_ = c.giveBack(context.WithoutCancel(ctx), path)
			return -1, err
		}
		if !used[i] {
			return i, nil
		}
		if err := c.giveBack(ctx, path); err != nil {
			return -1, c.b.opError("give back a slot of "+c.req.Key, err)
		}
	}
	return -1, nil
}

// heldSlots reads the line again, and the slots kept by the hold nodes
// among its holders (ours is a lock node: Take runs only among them),
// expired or not. A holder still making its hold (its lock node is still
// there) is passed over: it keeps its slot node until it deletes that
// with its lock node, in one multi, so a slot taken after that is given
// back when claimSlot reads the holds again.
func (c *contender) heldSlots(ctx context.Context) (map[int]bool, error) {
	line, _, err := c.b.lineOf(ctx, c.s, c.req.Key, "read the line of ")
	if err != nil {
		return nil, err
	}
	r, err := c.b.readHolders(ctx, c.s, c.req.Key, c.others(line, -1), nil)
	return slotsOf(r.hs), err
}

// slotsOf is the slots kept by the holds hs.
func slotsOf(hs []holding) map[int]bool {
	used := map[int]bool{}
	for _, h := range hs {
		used[h.rec.Slot] = true
	}
	return used
}

// serverClock reads the server's clock: the mtime of a write of our own
// node (lock.ErrLookAgain if it is gone: the next Look finds our place
// lost).
func (c *contender) serverClock(ctx context.Context) (int64, error) {
	st, err := c.s.set(ctx, c.dir+"/"+c.node, c.rec.encode())
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, lock.ErrLookAgain
	case err != nil:
		return 0, c.b.opError("read the server's clock", err)
	}
	return st.Mtime, nil
}

// expireHolds deletes the expired holds among the other holders, as Look
// read them by the server's clock, by compare-and-delete on the version
// read. Having deleted one, or found one gone since the line was read, it
// answers lock.ErrLookAgain: read the line again.
func (c *contender) expireHolds(ctx context.Context, r holdersRead) error {
	for _, h := range r.expired {
		if err := ignore(c.s.remove(ctx, c.dir+"/"+h.hold, h.stat.Version), zk.ErrNoNode, zk.ErrBadVersion); err != nil {
			return c.b.opError("delete the expired hold on "+c.req.Key, err)
		}
	}
	if len(r.expired) > 0 || slices.ContainsFunc(r.gone, func(e entry) bool { return e.lock == "" }) {
		return lock.ErrLookAgain
	}
	return nil
}

// Fencing tokens. Sequence numbers and zxids start again when ZooKeeper
// loses its data, so the token follows lock.NextToken, with the key's last
// token in a persistent node beside the key's node (a container), so that
// it outlives every holder (grantToken).

// tokenAttempts bounds how often a grant reads the counter again because
// it moved between the read and the multi (it cannot while we are at the
// head of the line, short of a break and a new holder in between).
const tokenAttempts = 5

// tokenPath is where the last token of key is kept.
func (b *Backend) tokenPath(key string) string { return b.keyDir(key) + "#token" }

// counterRead is one read of a key's counter: its value and version (-1:
// it is missing).
type counterRead struct {
	last    uint64
	version int32
	err     error
}

// readCounter reads the key's counter on its own goroutine, so that the
// read can go out with Look's read of the line. The session is the one
// at the call: Take or Leave may drop c.s before the goroutine runs.
func (c *contender) readCounter(ctx context.Context) <-chan counterRead {
	ch, path, s := make(chan counterRead, 1), c.b.tokenPath(c.req.Key), c.s
	go func() {
		d, ok, err := s.get(ctx, path)
		last, perr := strconv.ParseUint(string(d.raw), 10, 64)
		switch {
		case err != nil || !ok:
			ch <- counterRead{version: -1, err: err}
		case perr != nil:
			raw := string(d.raw[:min(len(d.raw), 40)])
			ch <- counterRead{err: fmt.Errorf("the token counter of %s (node %s) holds %q, not a token: delete that node (the next token then follows the clock)", c.req.Key, path, raw)}
		default:
			ch <- counterRead{last: last, version: d.stat.Version}
		}
	}()
	return ch
}

// grantToken hands out the key's next token to us, writing rec (given
// the token) to our node in the same multi that raises the counter, as
// read by the last Look (readCounter; later attempts read it again).
// granted is the monotonic time taken just before the multi was sent (the
// write proves our session was alive then). lock.ErrLookAgain: our node
// is gone.
func (c *contender) grantToken(ctx context.Context, rec *record) (granted time.Time, err error) {
	path := c.b.tokenPath(c.req.Key)
	for attempt := 1; ; attempt++ {
		r := <-c.counter
		if r.err != nil {
			return granted, r.err
		}
		rec.Token = lock.NextToken(r.last, lock.ClockMicros(time.Now()))
		data := []byte(strconv.FormatUint(rec.Token, 10))
		var counterOp any = &zk.SetDataRequest{Path: path, Data: data, Version: r.version}
		if r.version < 0 {
			counterOp = &zk.CreateRequest{Path: path, Data: data, Acl: acl, Flags: zk.FlagPersistent}
		}
		granted = time.Now()
		res, err := c.s.multi(ctx, counterOp, &zk.SetDataRequest{Path: c.dir + "/" + c.node, Data: rec.encode(), Version: -1})
		switch {
		case err == nil:
			return granted, nil
		case len(res) == 2 && errors.Is(res[1].Error, zk.ErrNoNode):
			return granted, lock.ErrLookAgain // our node is gone: a lost place
		case !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode):
			return granted, err
		case attempt >= tokenAttempts: // the counter moved (or appeared, or went) since our read, every time
			return granted, fmt.Errorf("the token counter of %s kept moving", c.req.Key)
		}
		c.counter = c.readCounter(ctx)
	}
}
