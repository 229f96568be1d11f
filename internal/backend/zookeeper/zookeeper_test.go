package zookeeper

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
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

func ctx(t *testing.T) context.Context { return wait.Context(t, 20*time.Second) }
