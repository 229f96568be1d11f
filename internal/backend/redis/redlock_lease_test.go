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
	m, r, a := brokenButOnMaster0(t)
	ctx := context.Background()
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

// TestRedlockMissedBreakFreeNotTakenBack: as above, but no one takes the
// key after the break. Master 2 kept its data and has the key free where
// A's record was (A's acquire wrote its token there): the lease ended
// there, and master 1, which lost its data, may have been broken too. A's
// renewal must not take it back (masters 0 and 1 would be a quorum for a
// broken lease). A free key on a master that never held A's record does
// not veto (TestRedlockQuorumGrantTakesBackLostMaster); this one must.
func TestRedlockMissedBreakFreeNotTakenBack(t *testing.T) {
	m, r, a := brokenButOnMaster0(t)
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 1)
	if err := a.Renew(context.Background()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's renewal after the break: %v, want ErrNotHeld", err)
	}
	for k, want := range []string{"oA", "", ""} {
		if o := ownerOn(t, r, k, "k"); o != want {
			t.Fatalf("master %d after A's renewal: owner %q, want %q", k, o, want)
		}
	}
}

// brokenButOnMaster0 takes k for A (oA, ttl 5 s) on three masters, then
// breaks it with master 0's link paused, then cut: the break has its
// quorum on masters 1 and 2 and misses master 0, where A's record stays.
func brokenButOnMaster0(t *testing.T) (*server.RedisMasters, *Redlock, lock.Lease) {
	t.Helper()
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
	return m, r, a
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

// TestRedlockQuorumGrantTakesBackLostMaster (review r10): A's lease is
// granted on masters 0 and 1 only (master 2 cut off during the acquire,
// its data kept); then master 1 loses its data. Master 2 has the key
// free, but it never held A's record, so it says nothing about A's
// lease: A's renewal takes master 1 back. Before: master 2's free key
// vetoed the take-back and A's lease was lost (76) though no one else
// ever held the key.
func TestRedlockQuorumGrantTakesBackLostMaster(t *testing.T) {
	m, r := startMasters(t)
	ctx := context.Background()
	p, err := faultproxy.New(m.Nodes[2].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	rp := openRedlock(t, "redlock://"+m.Nodes[0].Addr()+","+m.Nodes[1].Addr()+","+p.Addr())
	// Every master in use (its boot marker made) before the acquire.
	w, err := lock.TryOnce(ctx, rp, req("warm", "oW", 1, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p.Drop()
	a, err := lock.TryOnce(ctx, rp, req("k", "oA", 1, 5*time.Second))
	if err != nil {
		t.Fatalf("A on masters 0 and 1: %v", err)
	}
	p.Heal()
	if o := ownerOn(t, r, 2, "k"); o != "" {
		t.Fatalf("master 2 after the acquire: owner %q, want free (cut off)", o)
	}
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 1)
	if err := a.Renew(ctx); err != nil {
		t.Fatalf("A's renewal after master 1 lost its data: %v, want renewed", err)
	}
	for k, want := range []string{"oA", "oA", ""} {
		if o := ownerOn(t, r, k, "k"); o != want {
			t.Fatalf("master %d after A's renewal: owner %q, want %q", k, o, want)
		}
	}
}

// TestRedlockResumedAfterLossTakesBackLostMaster: master 2 loses its data
// before a lease is resumed (the resume finds the record on masters 0
// and 1), then master 1 loses its data too. Master 2's key is free and
// older than the resumed lease, but the resume did not find A's record
// there: the renewal takes master 1 back. Before: master 2 vetoed it.
func TestRedlockResumedAfterLossTakesBackLostMaster(t *testing.T) {
	m, r, l := heldOnMasters(t)
	ctx := context.Background()
	flushMasters(t, m, 2)
	// Master 2 back in use (its new boot marker made) before the resume.
	w, err := lock.TryOnce(ctx, r, req("warm", "oW", 1, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	resumed, err := r.Resume(ctx, l.Handle())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 1)
	if err := resumed.Renew(ctx); err != nil {
		t.Fatalf("the resumed lease's renewal: %v, want renewed", err)
	}
	if o := ownerOn(t, r, 1, "k"); o != "o1" {
		t.Fatalf("master 1 after the renewal: owner %q, want o1 (taken back)", o)
	}
}

// TestRedlockBrokenEverywhereNotTakenBack: A's lease is broken on all
// three masters and no one takes the key; then masters 1 and 2 lose
// their data. Master 0 kept its data and has the key free where A's
// record was: the lease ended, and A's renewal must not take 1 and 2
// back (a quorum). No master renewed A's record as it stood, which is
// enough to refuse; master 0's free key would veto as well.
func TestRedlockBrokenEverywhereNotTakenBack(t *testing.T) {
	m, r := startMasters(t)
	ctx := context.Background()
	a, err := lock.TryOnce(ctx, r, req("k", "oA", 1, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Break(ctx, "k", 0); err != nil {
		t.Fatalf("break: %v", err)
	}
	time.Sleep(sameBoot + 300*time.Millisecond)
	flushMasters(t, m, 1, 2)
	if err := a.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's renewal after the break: %v, want ErrNotHeld", err)
	}
	for k := range 3 {
		if o := ownerOn(t, r, k, "k"); o != "" {
			t.Fatalf("master %d after A's renewal: owner %q, want free", k, o)
		}
	}
}

// TestRedlockMayTakeBack: the rule on its own, over three masters.
func TestRedlockMayTakeBack(t *testing.T) {
	down := errors.New("down")
	all, none := []bool{true, true, true}, []bool{false, false, false}
	for _, c := range []struct {
		name  string
		ans   []int64
		errs  []error
		known []bool
		want  bool
	}{
		{"renewed, lost, renewed", []int64{rlRenewed, rlLost, rlRenewed}, nil, all, true},
		{"free on a known master", []int64{rlRenewed, rlLost, rlFree}, nil, all, false},
		{"free on a master never ours", []int64{rlRenewed, rlLost, rlFree}, nil, []bool{true, true, false}, true},
		{"another's, even never ours", []int64{rlRenewed, rlLost, rlAnother}, nil, []bool{true, true, false}, false},
		{"every master lost", []int64{rlLost, rlLost, rlLost}, nil, all, false},
		{"nothing renewed", []int64{rlFree, rlLost, rlLost}, nil, none, false},
		{"a known master down", []int64{rlRenewed, rlLost, rlFree}, []error{nil, nil, down}, all, true},
	} {
		errs := c.errs
		if errs == nil {
			errs = make([]error, 3)
		}
		if got := mayTakeBack(c.ans, errs, c.known); got != c.want {
			t.Errorf("%s: mayTakeBack %v, want %v", c.name, got, c.want)
		}
	}
}
