package redis

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

func startSentinel(t *testing.T) *server.RedisSentinel {
	t.Helper()
	s, err := server.StartRedisSentinel(t.TempDir(), 2)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sentinelBackend(t *testing.T, url string) *Backend {
	t.Helper()
	cfg, err := ParseSentinelURL(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "distlock"
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestWaitReplicas: with wait=N a grant that fewer than N replicas
// acknowledge is released again and reported as unavailable (transient:
// a waiter tries again); a renewal and a hold that fewer acknowledge fail
// (the renewal with an error that is not ErrNotHeld: a failed renewal,
// not a lost lease); once the replicas are back, renewals succeed.
func TestWaitReplicas(t *testing.T) {
	s := startSentinel(t)
	ctx := context.Background()
	for _, limit := range []int{1, 3} {
		b3 := sentinelBackend(t, s.URL("?wait=3"))
		_, err := lock.TryOnce(ctx, b3, req("g", "o1", limit, 2*time.Second))
		if !lock.Transient(err) || !strings.Contains(err.Error(), "only 2 of the 3 replicas asked for (wait=3) acknowledged the lock within 200ms; g was granted but not taken, and distlock released it again") {
			t.Fatalf("limit %d: grant with wait=3 and 2 replicas: %v", limit, err)
		}
		if _, held, err := b3.Inspect(ctx, "g"); err != nil || held {
			t.Fatalf("limit %d: after the refused grant: held %v, %v", limit, held, err)
		}
	}

	b := sentinelBackend(t, s.URL("?wait=1"))
	for _, limit := range []int{1, 3} {
		l, err := lock.TryOnce(ctx, b, req("r", "o2", limit, 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range s.Replicas {
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		err = l.Renew(ctx)
		if err == nil || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "only 0 of the 1 replicas asked for") && !strings.Contains(err.Error(), "WAIT failed") {
			t.Errorf("limit %d: renewal with every replica stopped: %v", limit, err)
		}
		if limit == 1 {
			if err := l.Hold(ctx, 2*time.Second, lock.HoldMinHold); !errors.Is(err, lock.ErrUnavailable) {
				t.Errorf("hold with every replica stopped: %v", err)
			}
		}
		for _, r := range s.Replicas {
			if err := r.Cont(); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Renew(ctx); err != nil {
			t.Errorf("limit %d: renewal with the replicas back: %v", limit, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitReplicasLedger: with wait=N a ledger entry (a slot marked done)
// that fewer than N replicas acknowledge is a failed write, not a
// success a failover could take away.
func TestWaitReplicasLedger(t *testing.T) {
	s := startSentinel(t)
	ctx := context.Background()
	b3 := sentinelBackend(t, s.URL("?wait=3"))
	err := b3.PutEntry(ctx, "job", "e1", []byte("x"))
	if !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), "only 2 of the 3 replicas asked for (wait=3) acknowledged the run ledger's write within 1s") {
		t.Fatalf("ledger write with wait=3 and 2 replicas: %v", err)
	}
	b1 := sentinelBackend(t, s.URL("?wait=1"))
	if err := b1.PutEntry(ctx, "job", "e1", []byte("y")); err != nil {
		t.Fatalf("ledger write with wait=1 and 2 replicas: %v", err)
	}
}
