package etcd

import (
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
)

func TestConformance(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		locktest.Run(t, locktest.Options{
			Fair: true,
			Open: func(t *testing.T) lock.Backend { return newBackend(t, s) },
		})
	})
}
