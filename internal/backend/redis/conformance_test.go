package redis

import (
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
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
