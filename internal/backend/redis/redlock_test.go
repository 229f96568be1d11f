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
	"github.com/distlock/distlock/internal/testenv/server"
)

func startMasters(t *testing.T) (*server.RedisMasters, *Redlock) {
	t.Helper()
	m, err := server.StartRedisMasters(t.TempDir(), 3)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg, err := ParseRedlockURL(m.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "distlock"
	r, err := OpenRedlock(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return m, r
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
