package zookeeper

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// extraNode makes, on s, a lock node of c's nonce at the back of c's key's
// line, as a create of c's whose answer was lost would have: it returns
// its name.
func extraNode(t *testing.T, ctx context.Context, s *session, c *contender) string {
	t.Helper()
	if err := c.b.ensureDir(ctx, s, c.dir); err != nil {
		t.Fatal(err)
	}
	rec := newRecord(c.req, time.Now())
	path, err := s.create(ctx, c.dir+"/"+lockPrefix(c.limit, c.nonce), rec.encode(), zk.FlagEphemeralSequential)
	if err != nil {
		t.Fatal(err)
	}
	return path[len(c.dir)+1:]
}

// busy: err is a busy answer.
func busy(err error) bool {
	var b *lock.BusyError
	return errors.As(err, &b)
}

// exists: the node name of c's key is there.
func exists(t *testing.T, ctx context.Context, b *Backend, c *contender, name string) bool {
	t.Helper()
	ok, _, err := b.testAdmin(t).exists(ctx, c.dir+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestTwoLockNodesOnePlace: a contender whose first create's answer was
// lost, and which made a second node, behind another waiter, because its
// check read a server that had not applied the first yet, stands at its
// first node's place: it holds (it does not find its place lost, on every
// look, whatever order the server lists the nodes in), deletes its second
// node, and the other waiter is busy until it releases.
func TestTwoLockNodesOnePlace(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "twonodes")
	ctx := ctx(t)
	n := b.contender(request("k", "n", 5*time.Second))
	nl := lock.NewLine(n.req, n)
	t.Cleanup(nl.Leave)
	if err := n.openSession(ctx); err != nil {
		t.Fatal(err)
	}
	first := extraNode(t, ctx, n.s, n) // the create whose answer was lost

	other := lock.NewLine(request("k", "other", 5*time.Second), b.contender(request("k", "other", 5*time.Second)))
	t.Cleanup(other.Leave)
	if _, err := other.Try(ctx); !busy(err) {
		t.Fatalf("the waiter behind n's first node: %v, want busy", err)
	}
	l, err := nl.Try(ctx) // n joins again: a second node, at the back
	if err != nil {
		t.Fatalf("n, with a node ahead of the other waiter: %v, want it to hold", err)
	}
	if got := storeOf(l).lock; got != first {
		t.Fatalf("n holds with node %s, want its first, %s", got, first)
	}
	if names, _, err := b.testAdmin(t).children(ctx, n.dir); err != nil || len(names) != 2 || !slices.Contains(names, first) {
		t.Fatalf("the key's nodes once n holds: %q (%v), want n's first and the other waiter's", names, err)
	}
	for range 3 {
		if _, err := other.Try(ctx); !busy(err) {
			t.Fatalf("the other waiter while n holds: %v, want busy", err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ol, err := other.Try(ctx)
	if err != nil {
		t.Fatalf("the other waiter once n released: %v, want it to hold", err)
	}
	_ = ol.Release(ctx)
}

// TestBreakTakesTheExtraNode: a break of a holder that has a second lock
// node (its create's answer lost, the node made after it took) deletes
// that one too: else the holder stands on in line at that node's place,
// ahead of the waiter behind it, which the break was to let through.
func TestBreakTakesTheExtraNode(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "breakextra")
	ctx := ctx(t)
	l, err := lock.TryOnce(ctx, b, request("k", "n", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	st := storeOf(l)
	n := &contender{b: b, req: request("k", "n", 5*time.Second), limit: 1, nonce: st.nonce, dir: st.dir}
	extra := extraNode(t, ctx, st.s, n)
	other := lock.NewLine(request("k", "other", 5*time.Second), b.contender(request("k", "other", 5*time.Second)))
	t.Cleanup(other.Leave)
	if _, err := other.Try(ctx); !busy(err) {
		t.Fatalf("the waiter behind n: %v, want busy", err)
	}
	if _, err := b.Break(ctx, "k", l.Token()); err != nil {
		t.Fatal(err)
	}
	if exists(t, ctx, b, n, extra) {
		t.Fatalf("n's extra node %s outlived the break", extra)
	}
	ol, err := other.Try(ctx)
	if err != nil {
		t.Fatalf("the waiter once n was broken: %v, want it to hold", err)
	}
	_ = ol.Release(ctx)
}
