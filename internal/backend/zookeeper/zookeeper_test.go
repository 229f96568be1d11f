package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// startServer starts a real ZooKeeper for one test, skipping when it is
// not installed unless DISTLOCK_TEST_REQUIRE_SERVERS=1.
func startServer(t *testing.T) *server.Process {
	t.Helper()
	p, err := server.StartZooKeeper(t.TempDir())
	if errors.Is(err, server.ErrNoBinary) {
		if os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatalf("DISTLOCK_TEST_REQUIRE_SERVERS=1 but: %v", err)
		}
		t.Skipf("%v: the ZooKeeper engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func open(t *testing.T, addr, prefix string) *Backend {
	t.Helper()
	cfg, err := ParseURL("zk://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = prefix
	cfg.ConnectTimeout = 5 * time.Second
	b, err := New(wait.Context(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func request(key, owner string, ttl time.Duration) lock.Request {
	return lock.Request{Key: key, TTL: ttl, Owner: owner, Meta: lock.Meta{Host: "h", PID: 42, User: "u", Command: "cmd", Note: "n"}}
}

// semRequest is owner's request for a semaphore of limit on the key "sem".
func semRequest(owner string, limit int) lock.Request {
	r := request("sem", owner, 3*time.Second)
	r.Limit = limit
	return r
}

func ctx(t *testing.T) context.Context { return wait.Context(t, 20*time.Second) }

// TestSessionShorterThanTTLRefused: a server that grants a shorter session
// than --ttl is refused at once (64), naming what was granted.
func TestSessionShorterThanTTLRefused(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "short")
	// The test server's maxSessionTimeout is 600000ms.
	_, err := lock.TryOnce(ctx(t), b, request("k", "o", 700*time.Second))
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "grants sessions of at most 10m0s, shorter than --ttl 11m40s") {
		t.Fatalf("TTL above maxSessionTimeout: %v; want lock.ErrInvalid naming the granted timeout", err)
	}
	// A session granted as asked, and the lock works.
	l, err := lock.TryOnce(ctx(t), b, request("k", "o", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := storeOf(l).s.negotiated.Load(); got != 2000 {
		t.Fatalf("negotiated session timeout read as %dms, want 2000", got)
	}
	l.Release(ctx(t))
}

// TestTryOnceLeavesNothing: a busy try-once leaves no node in the line; a
// released lock leaves no key node behind, and the next acquirer creates
// it again.
func TestTryOnceLeavesNothing(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "tidy")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := lock.TryOnce(ctx(t), b, request("k", "bob", 2*time.Second)); !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("try-once on a held key: %v", err)
		}
	}
	names, _, err := b.testAdmin(t).conn.Children(b.keyDir("k"))
	if err != nil || len(names) != 1 {
		t.Fatalf("the line after three busy try-onces: %v, %v; want alice's node alone", names, err)
	}
	if err := l.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := b.testAdmin(t).conn.Exists(b.keyDir("k")); err != nil || ok {
		t.Fatalf("the key's node after the release: exists=%v err=%v; want it removed", ok, err)
	}
	l, err = lock.TryOnce(ctx(t), b, request("k", "bob", 2*time.Second))
	if err != nil {
		t.Fatalf("acquire after the key's node was removed: %v", err)
	}
	l.Release(ctx(t))
}

// TestBreakAlertsHolder: the holder's watch on its own node tells it of a
// break at once, and its renewal then answers ErrNotHeld.
func TestBreakAlertsHolder(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "alert")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Alerts():
		t.Fatal("an alert before anything happened")
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := b.Break(ctx(t), "k", l.Token()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Alerts():
	case <-time.After(5 * time.Second):
		t.Fatal("no alert within 5s of a break")
	}
	if err := l.Renew(ctx(t)); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew after a break: %v, want lock.ErrNotHeld", err)
	}
}

// TestRenewBoundedAndSessionExpiry: against a silent server a renewal
// returns when its context ends; once the server has expired the session,
// the renewal after the silence answers ErrNotHeld and the lock is free.
func TestRenewBoundedAndSessionExpiry(t *testing.T) {
	p := startServer(t)
	px, err := faultproxy.New(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	b := open(t, px.Addr(), "expiry")
	direct := open(t, p.Addr(), "expiry")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", time.Second))
	if err != nil {
		t.Fatal(err)
	}
	px.Pause()
	rctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	err = l.Renew(rctx)
	cancel()
	if err == nil || errors.Is(err, lock.ErrNotHeld) || time.Since(start) > 400*time.Millisecond {
		t.Fatalf("renew against a paused server: %v after %s; want a transient error within ~200ms", err, time.Since(start))
	}
	wait.Until(t, 10*time.Second, "the server expires the session", func() bool {
		_, held, err := direct.Inspect(ctx(t), "k")
		return err == nil && !held
	})
	px.Resume()
	wait.Until(t, 10*time.Second, "renew answers ErrNotHeld", func() bool {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return errors.Is(l.Renew(c), lock.ErrNotHeld)
	})
	if _, err := lock.TryOnce(ctx(t), direct, request("k", "bob", time.Second)); err != nil {
		t.Fatalf("acquire after the session expired: %v", err)
	}
}

// TestHoldKeepsPlaceAndExpires: a hold replaces the holder's node in its
// place in line: a waiter queued behind it waits until the hold expires
// (by the server's clock), then gets the lock with a greater token.
func TestHoldKeepsPlaceAndExpires(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "hold")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan lock.Lease, 1)
	go func() {
		w, err := acquire.Acquire(ctx(t), b, request("k", "bob", 2*time.Second), acquire.Options{Wait: 15 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	wait.Until(t, 10*time.Second, "bob queues", func() bool {
		names, _, _ := b.testAdmin(t).conn.Children(b.keyDir("k"))
		return len(names) == 2
	})
	held := time.Now()
	if err := l.Hold(ctx(t), 1500*time.Millisecond, lock.HoldMinHold); err != nil {
		t.Fatal(err)
	}
	w := <-got
	if w == nil {
		t.FailNow()
	}
	if d := time.Since(held); d < 1400*time.Millisecond {
		t.Fatalf("bob got the lock %s after a 1.5s hold began", d)
	}
	if w.Token() <= l.Token() {
		t.Fatalf("bob's token %d not greater than the hold's %d", w.Token(), l.Token())
	}
	w.Release(ctx(t))
}

// TestHoldJudgedByItsRecord: a hold lives until its mtime plus the length
// in its record, whatever its node's own TTL (an hour here, so the
// server's reaper is out of the picture): while it lives it holds its
// place (a contender is busy, naming it); once over, status passes over it
// by this machine's clock (leaving it in place) and a contender deletes it
// by the server's clock and takes the place. Fails if either clock's
// judgement (readHolders) or Look's delete (expireHolds) is lost.
func TestHoldJudgedByItsRecord(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "judged")
	s := b.testAdmin(t)
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			ctx, key := ctx(t), fmt.Sprint("k", limit)
			if err := b.ensureDir(ctx, s, b.keyDir(key)); err != nil {
				t.Fatal(err)
			}
			rec := newRecord(limited(key, "gone", limit), time.Now())
			rec.Hold, rec.HoldMs, rec.Token = lock.HoldHandle, time.Minute.Milliseconds(), 7
			path := b.keyDir(key) + "/" + holdName(limit, newNonce(), 0, 0)
			if _, err := s.conn.CreateTTL(path, rec.encode(), zk.FlagTTL, acl, time.Hour); err != nil {
				t.Fatal(err)
			}
			var held []lock.Lease // the other places
			for range limit - 1 {
				l, err := lock.TryOnce(ctx, b, limited(key, "other", limit))
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, l)
			}
			var busy *lock.BusyError
			if _, err := lock.TryOnce(ctx, b, limited(key, "early", limit)); !errors.As(err, &busy) || busy.Holder.Owner != "gone" {
				t.Fatalf("a contender while the hold lives: %v, want busy naming the hold", err)
			}
			rec.HoldMs = 1 // over 1ms after this write's mtime
			if _, err := s.conn.Set(path, rec.encode(), -1); err != nil {
				t.Fatal(err)
			}
			wait.Until(t, 5*time.Second, "status passes over the hold", func() bool {
				hs, err := b.InspectSlots(ctx, key)
				return err == nil && len(hs) == limit-1
			})
			if ok, _, err := s.conn.Exists(path); err != nil || !ok {
				t.Fatalf("status deleted the hold (%v)", err)
			}
			l, err := lock.TryOnce(ctx, b, limited(key, "late", limit))
			if err != nil {
				t.Fatalf("a contender once the hold is over: %v", err)
			}
			if ok, _, err := s.conn.Exists(path); err != nil || ok {
				t.Fatalf("the hold is still there once a contender took its place (%v)", err)
			}
			for _, l := range append(held, l) {
				l.Release(ctx)
			}
		})
	}
}

// TestHoldWithoutTTLNodesRefused: on servers that refuse TTL nodes (the
// default), a hold is refused with one line saying what to set (64), and
// the lock is still held by its session, so the caller can release it.
func TestHoldWithoutTTLNodesRefused(t *testing.T) {
	p, err := server.StartZooKeeperWithoutTTLNodes(t.TempDir())
	if errors.Is(err, server.ErrNoBinary) {
		if os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatalf("DISTLOCK_TEST_REQUIRE_SERVERS=1 but: %v", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	b := open(t, p.Addr(), "nottl")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	err = l.Hold(ctx(t), 5*time.Second, lock.HoldHandle)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "zookeeper.extendedTypesEnabled=true") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("hold without TTL nodes: %v; want one lock.ErrInvalid line naming extendedTypesEnabled", err)
	}
	if err := l.Renew(ctx(t)); err != nil {
		t.Fatalf("renew after a refused hold: %v", err)
	}
	if err := l.Release(ctx(t)); err != nil {
		t.Fatalf("release after a refused hold: %v", err)
	}
	checks := b.Doctor(ctx(t), lock.DoctorRequest{TTL: 2 * time.Second, Timeout: 5 * time.Second})
	for _, c := range checks {
		if c.Name == "ttl-nodes" && (c.Status != lock.CheckWarning || !strings.Contains(c.Fix, "extendedTypesEnabled")) {
			t.Errorf("doctor's ttl-nodes check: %+v", c)
		}
	}
}

// TestHeldAtOnceNeedsNoLongSession: distlock acquire (HeldAtOnce) may ask
// for a hold longer than any session the server grants: only the hold
// (a TTL node) has to last that long.
func TestHeldAtOnceNeedsNoLongSession(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "atonce")
	req := request("k", "alice", 700*time.Second) // above maxSessionTimeout (600s)
	req.HeldAtOnce = true
	l, err := lock.TryOnce(ctx(t), b, req)
	if err != nil {
		t.Fatalf("acquire to hold at once: %v", err)
	}
	if err := l.Hold(ctx(t), req.TTL, lock.HoldHandle); err != nil {
		t.Fatal(err)
	}
	h, held, err := b.Inspect(ctx(t), "k")
	if err != nil || !held || h.Hold != lock.HoldHandle || h.ExpiresIn < 690*time.Second {
		t.Fatalf("inspect the hold: %+v held=%v err=%v", h, held, err)
	}
	r, err := b.Resume(ctx(t), l.Handle())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

// TestSlotHeldAfterLineReadIsPassedOver: a slot kept by a hold that was
// made after a new holder read the line (so the new holder saw a running
// holder, whose slot node the hold then deleted) is not taken: the new
// holder checks the hold nodes again once its slot node is made.
func TestSlotHeldAfterLineReadIsPassedOver(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "slotrace")
	req := func(owner string) lock.Request { return semRequest(owner, 3) }
	kept, err := lock.TryOnce(ctx(t), b, req("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if s := kept.(lock.Slotted).Slot(); s != 0 {
		t.Fatalf("first holder got slot %d, want 0", s)
	}
	c := b.contender(req("next"))
	defer c.Leave()
	s, err := b.dial(ctx(t), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.s = s
	if err := c.takePlace(ctx(t)); err != nil {
		t.Fatal(err)
	}
	names, _, err := c.s.children(ctx(t), c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if line := parseLine(names); len(line) != 2 || line[0].lock == "" { // read while "kept" still runs on slot 0
		t.Fatalf("line %+v, want kept's lock node, then ours", line)
	}
	if err := kept.Hold(ctx(t), 10*time.Second, lock.HoldMinHold); err != nil {
		t.Fatal(err)
	}
	c.holds, c.counter = nil, c.readCounter(ctx(t)) // as a Look before the hold: no holds
	l, err := c.Take(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx(t))
	if got := l.(lock.Slotted).Slot(); got == 0 {
		t.Fatalf("the new holder took slot 0, which the hold keeps")
	}
}

// TestHoldAgainReplacesTheHold: holding again (distlock extend), shorter
// or longer, leaves one hold node, of the next generation, saying the new
// length; once that node is broken, holding again and releasing are "not
// yours", and leave nothing behind.
func TestHoldAgainReplacesTheHold(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "rehold")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []time.Duration{10 * time.Second, 3 * time.Second, 20 * time.Second} {
		if err := l.Hold(ctx(t), d, lock.HoldHandle); err != nil {
			t.Fatalf("hold %d (%s): %v", i, d, err)
		}
		names, _, err := b.testAdmin(t).conn.Children(b.keyDir("k"))
		if err != nil {
			t.Fatal(err)
		}
		line := parseLine(names)
		if len(names) != 1 || len(line) != 1 || line[0].gen != i || line[0].lock != "" {
			t.Fatalf("after hold %d: nodes %v, want one hold node of generation %d", i, names, i)
		}
		h, held, err := b.Inspect(ctx(t), "k")
		if err != nil || !held || h.ExpiresIn > d || h.ExpiresIn < d-time.Second || h.Token != l.Token() {
			t.Fatalf("after hold %d (%s): %+v held=%v err=%v", i, d, h, held, err)
		}
	}
	if _, err := b.Break(ctx(t), "k", l.Token()); err != nil {
		t.Fatal(err)
	}
	if err := l.Hold(ctx(t), 5*time.Second, lock.HoldHandle); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("hold after a break: %v, want lock.ErrNotHeld", err)
	}
	if err := l.Release(ctx(t)); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release after a break: %v, want lock.ErrNotHeld", err)
	}
	if names, _, _ := b.testAdmin(t).conn.Children(b.keyDir("k")); len(names) != 0 {
		t.Fatalf("nodes left after a broken hold: %v", names)
	}
}

// TestBreakFollowsAHoldMadeMeanwhile: a holder that makes its hold
// between a break's read and its delete has moved (its lock node is gone,
// its hold node stands for it): the break's delete answers lock.ErrMoved,
// and Break (lock.BreakAgain) breaks the hold by its token.
func TestBreakFollowsAHoldMadeMeanwhile(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "moved")
	l, err := lock.TryOnce(ctx(t), b, request("k", "alice", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	read, first := b.breakRead(b.testAdmin(t), "k"), true
	h, err := lock.BreakAgain(ctx(t), "k", l.Token(), func(ctx context.Context) ([]lock.Holder, func(int) (bool, error), error) {
		held, remove, err := read(ctx)
		if first {
			first = false
			if err := l.Hold(ctx, 10*time.Second, lock.HoldHandle); err != nil {
				t.Fatal(err)
			}
			if _, err := remove(0); !errors.Is(err, lock.ErrMoved) {
				t.Fatalf("delete of the node read before the hold: %v, want lock.ErrMoved", err)
			}
		}
		return held, remove, err
	})
	if err != nil || h.Token != l.Token() {
		t.Fatalf("break: %+v %v; want token %d broken", h, err, l.Token())
	}
	if _, held, err := b.Inspect(ctx(t), "k"); err != nil || held {
		t.Fatalf("after the break: held=%v err=%v; want free", held, err)
	}
}

// TestSemaphoreNamesOldestHolder: on a semaphore, Inspect, a busy answer
// and Break name the oldest holder (the lowest token, lock.Oldest), not
// the first in line: here the first in line took its token after the one
// behind it.
func TestSemaphoreNamesOldestHolder(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "oldest")
	req := func(owner string) lock.Request { return semRequest(owner, 2) }
	first := b.contender(req("first"))
	defer first.Leave()
	if err := first.Join(ctx(t)); err != nil {
		t.Fatal(err)
	}
	second, err := lock.TryOnce(ctx(t), b, req("second"))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release(ctx(t))
	if look, err := first.Look(ctx(t)); err != nil || look.Ahead != 0 {
		t.Fatalf("first's look: %+v, %v; want first in line", look, err)
	}
	late, err := first.Take(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Release(ctx(t))
	if late.Token() <= second.Token() {
		t.Fatalf("first in line took token %d, the one behind it %d: want it later", late.Token(), second.Token())
	}
	if h, held, err := b.Inspect(ctx(t), "sem"); err != nil || !held || h.Token != second.Token() {
		t.Fatalf("Inspect: %+v %v %v; want token %d", h, held, err, second.Token())
	}
	var busy *lock.BusyError
	if _, err := lock.TryOnce(ctx(t), b, req("third")); !errors.As(err, &busy) || busy.Holder.Token != second.Token() {
		t.Fatalf("a third try: %v; want busy naming token %d", err, second.Token())
	}
	if h, err := b.Break(ctx(t), "sem", 0); err != nil || h.Token != second.Token() {
		t.Fatalf("Break: %+v %v; want token %d", h, err, second.Token())
	}
}

// TestGiveBackLeavesAnothersSlot: a contender gives back a slot node only
// while it is its own. One its expired session lost and another contender
// made again is left alone (else two holders could be given one slot
// number); its own is deleted.
func TestGiveBackLeavesAnothersSlot(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "giveback")
	c := b.contender(semRequest("mine", 3))
	defer c.Leave()
	s, err := b.dial(ctx(t), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.s = s
	if err := b.ensurePath(ctx(t), c.s, c.dir); err != nil {
		t.Fatal(err)
	}
	theirs, mine := c.dir+"/"+slotName(1), c.dir+"/"+slotName(2)
	if _, err := c.s.create(ctx(t), theirs, []byte("another-nonce"), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := c.s.create(ctx(t), mine, []byte(c.nonce), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{theirs, mine, c.dir + "/" + slotName(0)} {
		if err := c.giveBack(ctx(t), path); err != nil {
			t.Fatalf("give back %s: %v", path, err)
		}
	}
	if _, ok, err := c.s.get(ctx(t), theirs); err != nil || !ok {
		t.Fatalf("another contender's slot node after our give-back: present %v, %v; want it left", ok, err)
	}
	if _, ok, err := c.s.get(ctx(t), mine); err != nil || ok {
		t.Fatalf("our slot node after our give-back: present %v, %v; want it deleted", ok, err)
	}
}
