package consul

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

// shared is one dev agent for the package's tests; each test gets a
// prefix of its own (an empty engine).
var (
	sharedOnce sync.Once
	shared     *server.Process
	sharedErr  error
	prefixes   atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

// agent returns the shared dev agent, skipping the test (failing it under
// DISTLOCK_TEST_REQUIRE_SERVERS=1) when Consul is not built.
func agent(t *testing.T) *server.Process {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "distlock-consul-test")
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = server.StartConsul(dir)
	})
	if sharedErr != nil {
		if errors.Is(sharedErr, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
			t.Skipf("%v: the Consul engine's tests are skipped (CI requires them)", sharedErr)
		}
		t.Fatal(sharedErr)
	}
	return shared
}

// open connects to addr under a fresh prefix.
func open(t *testing.T, addr string) *Backend {
	t.Helper()
	cfg, err := ParseURL("consul://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = fmt.Sprintf("test%d-%d", time.Now().UnixNano(), prefixes.Add(1))
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func request(key, owner string, ttl time.Duration) lock.Request {
	return lock.Request{Key: key, Owner: owner, TTL: ttl, Meta: lock.Meta{Host: "h", PID: 1}}
}
