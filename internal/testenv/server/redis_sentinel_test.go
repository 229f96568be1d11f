package server

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestRedisSentinelFailover: the deployment starts with its replicas in
// sync and its sentinels naming the master; once the master is killed the
// sentinels promote a replica, which then has the other replica in sync.
func TestRedisSentinelFailover(t *testing.T) {
	start := time.Now()
	s, err := StartRedisSentinel(t.TempDir(), 2)
	if errors.Is(err, ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t.Logf("started in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	old, err := s.MasterAddr(ctx)
	if err != nil || old != s.Master.Addr() {
		t.Fatalf("sentinels name %q (%v), want %s", old, err, s.Master.Addr())
	}
	if err := s.WaitAcquainted(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("acquainted after %s", time.Since(start).Round(time.Millisecond))
	killed := time.Now()
	if err := s.Master.Kill(); err != nil {
		t.Fatal(err)
	}
	addr, err := s.WaitFailover(ctx, old, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node(addr) == nil {
		t.Fatalf("new master %s is none of ours", addr)
	}
	t.Logf("failover to %s done %s after the kill", addr, time.Since(killed).Round(time.Millisecond))
}
