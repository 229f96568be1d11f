package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
)

// flushMasters empties the given masters (FLUSHALL: their data is lost,
// boot markers included).
func flushMasters(t *testing.T, m *server.RedisMasters, ks ...int) {
	t.Helper()
	for _, k := range ks {
		c := goredis.NewClient(&goredis.Options{Addr: m.Nodes[k].Addr()})
		err := c.FlushAll(context.Background()).Err()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// ownerOn is the owner of key on master k ("" when free there).
func ownerOn(t *testing.T, r *Redlock, k int, key string) string {
	t.Helper()
	h, held, err := r.nodes[k].Inspect(context.Background(), key)
	if err != nil {
		t.Fatalf("master %d: %v", k, err)
	}
	if !held {
		return ""
	}
	return h.Owner
}

// TestRedlockBrokenLeaseNotTakenBack (audit r10): A's lease is broken and
// B takes the key on all three masters with a greater token; then masters
// 1 and 2 lose their data (more than sameBoot after both grants). A's
// renewal must not take the key back on them: they are a quorum, but a
// loss erases a break too, and master 0, which kept its data, names B.
// A's renewal is ErrNotHeld, and B's renewal takes the two masters back.
// Before: A's renewal re-created its record on masters 1 and 2, a quorum
// (status named A), and B's renewal failed while A's ran on.
func TestRedlockBrokenLeaseNotTakenBack(t *testing.T) {
	m, r := startMasters(t)
	ctx := context.Background()
	a, err := lock.TryOnce(ctx, r, req("k", "oA", 1, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Break(ctx, "k", 0); err != nil {
		t.Fatalf("break: %v", err)
	}
	b, err := lock.TryOnce(ctx, r, req("k", "oB", 1, 5*time.Second))
	if err != nil {
		t.Fatalf("B after the break: %v", err)
	}
	if b.Token() <= a.Token() {
		t.Fatalf("B's token %d, A's %d: want a greater one", b.Token(), a.Token())
	}
	// A renewal takes a key back only on a master that lost its data
	// more than sameBoot after the grant.
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 1, 2)
	if err := a.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's renewal after the break: %v, want ErrNotHeld", err)
	}
	for k := 1; k < 3; k++ {
		if o := ownerOn(t, r, k, "k"); o != "" {
			t.Fatalf("master %d after A's renewal: owner %q, want free (nothing of A's re-created)", k, o)
		}
	}
	if err := b.Renew(ctx); err != nil {
		t.Fatalf("B's renewal: %v", err)
	}
	for k := range 3 {
		if o := ownerOn(t, r, k, "k"); o != "oB" {
			t.Fatalf("master %d after B's renewal: owner %q, want oB", k, o)
		}
	}
	if h, held, err := r.Inspect(ctx, "k"); err != nil || !held || h.Owner != "oB" || h.Token != b.Token() {
		t.Fatalf("status: %+v %v %v, want B's lease", h, held, err)
	}
}

// TestRedlockMissedBreakNotTakenBack: a break that one master did not
// hear (its link paused, then cut: the break has its quorum on the other
// two) leaves A's record there; B takes the other two; then master 1 loses
// its data. A's renewal finds its record as it stood on master 0 and
// master 1 lost, but master 2, which kept its data, says the key is not
// A's: master 1 may have been broken too, so it is not taken back, and
// A's renewal is ErrNotHeld. (Counting the take-back gave A masters 0 and
// 1, a quorum, beside B.)
func TestRedlockMissedBreakNotTakenBack(t *testing.T) {
	m, r := startMasters(t)
	ctx := context.Background()
	p, err := faultproxy.New(m.Nodes[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	breaker := openRedlock(t, "redlock://"+p.Addr()+","+m.Nodes[1].Addr()+","+m.Nodes[2].Addr())
	a, err := lock.TryOnce(ctx, r, req("k", "oA", 1, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p.Pause()
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	err = breaker.breakOwner(bctx, "k", "oA")
	cancel()
	if err != nil {
		t.Fatalf("break on two masters of three: %v", err)
	}
	p.Close() // drops the release held for master 0
	if o := ownerOn(t, r, 0, "k"); o != "oA" {
		t.Fatalf("master 0 after the break: owner %q, want oA's record (the break must miss it)", o)
	}
	if _, err := lock.TryOnce(ctx, r, req("k", "oB", 1, 5*time.Second)); err != nil {
		t.Fatalf("B after the break: %v", err)
	}
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 1)
	if err := a.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's renewal after the break: %v, want ErrNotHeld", err)
	}
	if o := ownerOn(t, r, 1, "k"); o == "oA" {
		t.Fatalf("master 1 after A's renewal: A's record re-created")
	}
	if o := ownerOn(t, r, 2, "k"); o != "oB" {
		t.Fatalf("master 2: owner %q, want oB", o)
	}
}

// TestRedlockEveryMasterLostRenewalFails: when every master lost its data
// since the grant (all restarted empty), nothing shows the lease is still
// ours: the renewal is ErrNotHeld and re-creates nothing, as a single
// Redis restarted empty. Each surviving case is kept: one master lost
// (TestRedlockResumedLeaseTakesBackItsRecord), two of three while the
// third kept our record (TestRedlockDelayedRestart).
func TestRedlockEveryMasterLostRenewalFails(t *testing.T) {
	m, r, l := heldOnMasters(t)
	ctx := context.Background()
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 0, 1, 2)
	if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renewal with every master emptied: %v, want ErrNotHeld", err)
	}
	for k := range 3 {
		if o := ownerOn(t, r, k, "k"); o != "" {
			t.Fatalf("master %d: owner %q, want free", k, o)
		}
	}
}
