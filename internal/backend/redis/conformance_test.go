package redis

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
	"github.com/distlock/distlock/internal/testenv/server"
)

func TestConformance(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		locktest.Run(t, locktest.Options{
			Fair: true,
			Open: func(t *testing.T) lock.Backend {
				b := newTestBackend(t, s)
				b.prefix = "conformance-" + t.Name()
				return b
			},
		})
	})
}

// TestConformanceSentinel runs the suite on a master found through
// Sentinel, waiting for one of its two replicas (wait=1).
func TestConformanceSentinel(t *testing.T) {
	s := startSentinel(t)
	locktest.Run(t, locktest.Options{
		Fair: true,
		Open: func(t *testing.T) lock.Backend {
			b := sentinelBackend(t, s.URL("?wait=1"))
			b.prefix = "conformance-" + t.Name()
			return b
		},
	})
}

// TestConformanceCluster runs the suite on a cluster of three masters.
func TestConformanceCluster(t *testing.T) {
	c, err := server.StartRedisCluster(t.TempDir(), 3)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	locktest.Run(t, locktest.Options{
		Fair: true,
		Open: func(t *testing.T) lock.Backend {
			cfg, err := ParseClusterURL(c.URL())
			if err != nil {
				t.Fatal(err)
			}
			cfg.Prefix = "conformance-" + t.Name()
			b, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}

// TestConformanceRedlock runs the suite on Redlock over three masters
// (waiters poll, no semaphores).
func TestConformanceRedlock(t *testing.T) {
	m, err := server.StartRedisMasters(t.TempDir(), 3)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	locktest.Run(t, locktest.Options{
		NoSemaphores: true,
		Open: func(t *testing.T) lock.Backend {
			cfg, err := ParseRedlockURL(m.URL())
			if err != nil {
				t.Fatal(err)
			}
			cfg.Prefix = "conformance-" + t.Name()
			b, err := OpenRedlock(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}
