package zookeeper

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// joined is a contender of "sem" (limit 3) for owner, in line, with the
// slot claimSlot gave it (want: which).
func joined(t *testing.T, b *Backend, owner string, want int) *contender {
	t.Helper()
	c := b.contender(semRequest(owner, 3))
	t.Cleanup(c.Leave)
	if err := c.Join(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.claimSlot(ctx(t)); err != nil || got != want {
		t.Fatalf("%s claimed slot %d (%v), want %d", owner, got, err, want)
	}
	return c
}

// slotOwner is the data of slot node i of c's key ("" when it is gone).
func slotOwner(t *testing.T, c *contender, i int) string {
	t.Helper()
	d, _, err := c.b.testAdmin(t).get(ctx(t), c.dir+"/"+slotName(i))
	if err != nil {
		t.Fatal(err)
	}
	return string(d.raw)
}

// breakAcross reads the holders of "sem", the one of nonce alone, and
// the ops that break it (breakOps), then runs between, which frees its
// slot 0, and has "y" claim that slot, before it sends those ops: they
// must fail with want and leave y's slot node.
func breakAcross(t *testing.T, b *Backend, nonce string, want error, between func() error) {
	t.Helper()
	adm := b.testAdmin(t)
	hs, err := b.holders(ctx(t), adm, "sem")
	if err != nil || len(hs) != 1 || hs[0].nonce != nonce {
		t.Fatalf("holders %+v, %v; want %s alone", hs, err, nonce)
	}
	ops := b.breakOps(ctx(t), adm, b.keyDir("sem"), hs[0])
	if err := between(); err != nil {
		t.Fatal(err)
	}
	y := joined(t, b, "y", 0)
	if _, err := adm.multi(ctx(t), ops...); !errors.Is(err, want) {
		t.Fatalf("the break's multi: %v, want %v", err, want)
	}
	if got := slotOwner(t, y, 0); got != y.nonce {
		t.Fatalf("slot 0 after the break's multi: owned by %q, want y's (%s)", got, y.nonce)
	}
}

// TestGiveBackAfterTheSlotChangedHands: a slot node read as ours, then
// deleted without us (by a break, or with our session) and claimed by
// another contender before our delete, is left to that one: the node has
// the same name and version, but the key node's version moved. A slot
// claimed meanwhile at another number only makes giveBack read again.
func TestGiveBackAfterTheSlotChangedHands(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "slothands")
	x := joined(t, b, "x", 0)
	path := x.dir + "/" + slotName(0)
	read, ok, err := readSlot(ctx(t), x.s, x.dir, path, x.nonce)
	if err != nil || !ok {
		t.Fatalf("read of our slot node: %v %v", ok, err)
	}
	if err := b.testAdmin(t).remove(ctx(t), path, -1); err != nil {
		t.Fatal(err)
	}
	y := joined(t, b, "y", 0)
	if err := x.dropSlot(ctx(t), read); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete of the slot node read before it changed hands: %v, want zk.ErrBadVersion", err)
	}
	if got := slotOwner(t, x, 0); got != y.nonce {
		t.Fatalf("slot 0 after our delete: owned by %q, want y's (%s)", got, y.nonce)
	}
	if err := x.giveBack(ctx(t), path); err != nil || slotOwner(t, x, 0) != y.nonce {
		t.Fatalf("giveBack of a slot now another's: %v; slot 0 owned by %q, want y's", err, slotOwner(t, x, 0))
	}

	// Ours at slot 1; z claims slot 2 between our read and our delete.
	if got, err := x.claimSlot(ctx(t)); err != nil || got != 1 {
		t.Fatalf("x claimed slot %d (%v), want 1", got, err)
	}
	path = x.dir + "/" + slotName(1)
	if read, _, err = readSlot(ctx(t), x.s, x.dir, path, x.nonce); err != nil {
		t.Fatal(err)
	}
	joined(t, b, "z", 2)
	if err := x.dropSlot(ctx(t), read); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete after another slot was claimed: %v, want zk.ErrBadVersion", err)
	}
	if err := x.giveBack(ctx(t), path); err != nil || slotOwner(t, x, 1) != "" {
		t.Fatalf("giveBack of our slot: %v; slot 1 owned by %q, want it deleted", err, slotOwner(t, x, 1))
	}
}

// TestBreakLeavesASlotClaimedSinceItsRead: a break reads the slot node of
// a holder still taking (its record names no slot yet: 0), which then
// gives it back, and another claims it, before the break's multi: that
// multi fails (the holder moved), leaving both the holder's lock node and
// the other's slot node.
func TestBreakLeavesASlotClaimedSinceItsRead(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "slotbreak")
	x := joined(t, b, "x", 0)
	breakAcross(t, b, x.nonce, zk.ErrBadVersion, func() error { return x.giveBack(ctx(t), x.dir+"/"+slotName(0)) })
	if _, ok, err := b.testAdmin(t).get(ctx(t), x.dir+"/"+x.node); err != nil || !ok {
		t.Fatalf("x's lock node after the failed multi: present %v, %v; want it kept", ok, err)
	}
}

// TestBreakOfAReleasedHolderLeavesTheSlot: a holder with its token
// releases (its lock node and slot node go in one multi) between a
// break's read and its multi, and another claims the slot: the break's
// delete of the lock node read fails the whole multi.
func TestBreakOfAReleasedHolderLeavesTheSlot(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "slotrelease")
	l, err := lock.TryOnce(ctx(t), b, semRequest("x", 3))
	if err != nil {
		t.Fatal(err)
	}
	breakAcross(t, b, storeOf(l).nonce, zk.ErrNoNode, func() error { return l.Release(ctx(t)) })
}
