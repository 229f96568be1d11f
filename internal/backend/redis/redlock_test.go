package redis

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
)

func startMasters(t *testing.T) (*server.RedisMasters, *Redlock) {
	t.Helper()
	m := startRedisMasters(t)
	return m, openRedlock(t, m.URL())
}

// startRedisMasters starts three independent masters (skipped without
// redis-server, unless DISTLOCK_TEST_REQUIRE_SERVERS=1).
func startRedisMasters(t *testing.T) *server.RedisMasters {
	t.Helper()
	m, err := server.StartRedisMasters(t.TempDir(), 3)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// openRedlock opens a Redlock on url with the prefix "distlock".
func openRedlock(t *testing.T, url string) *Redlock {
	t.Helper()
	cfg, err := ParseRedlockURL(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "distlock"
	r, err := OpenRedlock(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedlockTokensRiseAcrossQuorums: a holder's token is the maximum its
// quorum granted, written back to that quorum before the lease is
// returned, so a later quorum that shares only part of it still grants a
// greater token. Here node 0's counter runs far ahead of the others'; a
// holder on all three gets a token from it, then node 0 dies: the next
// holder's quorum (nodes 1 and 2) must still grant a greater token.
// (Without the write-back nodes 1 and 2 would grant one from their own
// counters, far below.)
func TestRedlockTokensRiseAcrossQuorums(t *testing.T) {
	m, r := startMasters(t)
	ctx := context.Background()
	ahead := uint64(time.Now().UnixMicro()) + 1e12
	c := goredis.NewClient(&goredis.Options{Addr: m.Nodes[0].Addr()})
	if err := c.Set(ctx, "distlock:{k}:token", strconv.FormatUint(ahead, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	l1, err := lock.TryOnce(ctx, r, req("k", "o1", 1, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l1.Token() != ahead+1 {
		t.Fatalf("first token %d, want the quorum's maximum %d", l1.Token(), ahead+1)
	}
	if h, held, err := r.Inspect(ctx, "k"); err != nil || !held || h.Token != l1.Token() {
		t.Fatalf("inspect: %+v %v %v", h, held, err)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	l2, err := lock.TryOnce(ctx, r, req("k", "o2", 1, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d after %d: tokens must rise across quorums", l2.Token(), l1.Token())
	}
	if err := l2.Renew(ctx); err != nil {
		t.Fatalf("renew with a quorum of two: %v", err)
	}
	if err := m.Nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := l2.Renew(ctx); err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew with one node of three: %v, want a failed renewal", err)
	}
	if _, err := lock.TryOnce(ctx, r, req("other", "o3", 1, 2*time.Second)); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire with one node of three: %v, want unavailable", err)
	}
}

// TestRedlockTokenSameEverywhere (issue 20, hole 4): a master whose grant
// landed but whose reply was lost (its proxy holds what it sends) carries
// the token it granted itself, here a far greater one. The holder's token
// is still the one status, list and break --token see; the first renewal
// writes it into that master's record too.
func TestRedlockTokenSameEverywhere(t *testing.T) {
	m := startRedisMasters(t)
	p, err := faultproxy.New(m.Nodes[2].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r := openRedlock(t, "redlock://"+m.Nodes[0].Addr()+","+m.Nodes[1].Addr()+","+p.Addr())
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: m.Nodes[2].Addr()})
	defer c.Close()
	ahead := uint64(time.Now().UnixMicro()) + 1e12
	if err := c.Set(ctx, "distlock:{k}:token", strconv.FormatUint(ahead, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Load the scripts everywhere first: with the replies held, a
	// NOSCRIPT answer would keep the grant from landing.
	warm, err := lock.TryOnce(ctx, r, req("warm", "o0", 1, 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p.PauseReplies()
	l, err := lock.TryOnce(ctx, r, req("k", "o1", 1, 3*time.Second))
	p.Resume()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.HGet(ctx, "distlock:{k}", "token").Result(); err != nil || got != strconv.FormatUint(ahead+1, 10) {
		t.Fatalf("master 2's record: token %q (%v), want the one it granted itself, %d (the test needs its grant to land)", got, err, ahead+1)
	}
	if l.Token() == ahead+1 {
		t.Fatalf("the holder's token is master 2's, whose reply was held")
	}
	if h, held, err := r.Inspect(ctx, "k"); err != nil || !held || h.Token != l.Token() {
		t.Fatalf("status: %+v %v %v, want token %d (DISTLOCK_TOKEN)", h, held, err, l.Token())
	}
	if hs, err := r.List(ctx, ""); err != nil || len(hs) != 1 || hs[0].Token != l.Token() {
		t.Fatalf("list: %+v %v, want token %d", hs, err, l.Token())
	}
	if h := l.Handle(); h.Token != l.Token() {
		t.Fatalf("handle token %d, want %d", h.Token, l.Token())
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := c.HGet(ctx, "distlock:{k}", "token").Result(); err != nil || got != strconv.FormatUint(l.Token(), 10) {
		t.Fatalf("master 2's record after a renewal: token %q (%v), want %d", got, err, l.Token())
	}
	if _, err := r.Break(ctx, "k", l.Token()); err != nil {
		t.Fatalf("break --token DISTLOCK_TOKEN: %v", err)
	}
	if _, held, err := r.Inspect(ctx, "k"); err != nil || held {
		t.Fatalf("after the break: held %v (%v)", held, err)
	}
}

// TestRedlockResumedLeaseTakesBackItsRecord: a lease resumed from its
// handle (distlock hold's handles) knows the holder's record, read from
// the quorum as it resumed: when a master loses its data, the resumed
// lease's renewal takes the key back there with the holder's fields, as
// the lease that acquired it would.
func TestRedlockResumedLeaseTakesBackItsRecord(t *testing.T) {
	m, r, l := heldOnMasters(t)
	ctx := context.Background()
	resumed, err := r.Resume(ctx, l.Handle())
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: m.Nodes[0].Addr()})
	defer c.Close()
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A renewal takes the key back only on a master that lost its data
	// since the lease was granted (by more than sameBoot): let the
	// resumed lease grow older than that.
	time.Sleep(sameBoot + 200*time.Millisecond)
	if err := resumed.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := c.HGetAll(ctx, "distlock:{k}").Result()
	if err != nil {
		t.Fatal(err)
	}
	if rec["owner"] != "o1" || rec["token"] != strconv.FormatUint(l.Token(), 10) || rec["host"] != "host-o1" || rec["cmd"] != "./job.sh" {
		t.Fatalf("master 0's record after the resumed lease's renewal: %v, want o1's, with its token and fields", rec)
	}
}

// TestRedlockDelayedRestart: two masters of three lose their data while
// a lease lives on all three. They are free now, a quorum, but they do
// not count toward one until the longest lease live on the master that
// kept its data could have ended (Redlock's delayed restart): another
// owner is refused, and the holder's renewal takes the key back on them.
func TestRedlockDelayedRestart(t *testing.T) {
	m, r, l := heldOnMasters(t)
	ctx := context.Background()
	// The wiped masters' new boot markers must be younger than the kept
	// one's by more than sameBoot, or they would count as a deployment
	// that came up together.
	time.Sleep(sameBoot + 500*time.Millisecond)
	for _, n := range m.Nodes[:2] {
		c := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		err := c.FlushAll(ctx).Err()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if l2, err := lock.TryOnce(ctx, r, req("k", "o2", 1, 10*time.Second)); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("o2 on the two wiped masters: %v, %v; want busy (they do not count yet)", l2, err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("o1's renewal: %v", err)
	}
	for k := range 3 {
		if h, held, err := r.nodes[k].Inspect(ctx, "k"); err != nil || !held || h.Owner != "o1" {
			t.Fatalf("master %d after o1's renewal: %+v %v %v, want o1's", k, h, held, err)
		}
	}
}

// heldOnMasters starts three masters and takes k on them for o1 (ttl
// 10 s).
func heldOnMasters(t *testing.T) (*server.RedisMasters, *Redlock, lock.Lease) {
	t.Helper()
	m, r := startMasters(t)
	l, err := lock.TryOnce(context.Background(), r, req("k", "o1", 1, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return m, r, l
}

// A Redlock break releases a holder on the masters that name its owner,
// and answers ErrNotHeld when it was gone on every one (it let go since
// the break read it): Break then leaves it out of what it broke.
func TestRedlockBreakOwnerGoneEverywhere(t *testing.T) {
	_, r := startMasters(t)
	ctx := context.Background()
	l, err := lock.TryOnce(ctx, r, req("k", "o1", 1, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.breakOwner(ctx, "k", "o1"); err != nil {
		t.Fatalf("break of a held lock: %v", err)
	}
	if _, held, err := r.Inspect(ctx, "k"); err != nil || held {
		t.Fatalf("after the break: held %v, %v", held, err)
	}
	if err := r.breakOwner(ctx, "k", "o1"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("break of a holder gone everywhere: %v, want ErrNotHeld", err)
	}
	if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew after the break: %v, want ErrNotHeld", err)
	}
}
