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
