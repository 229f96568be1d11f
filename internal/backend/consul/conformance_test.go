package consul

import (
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
)

func TestConformance(t *testing.T) {
	addr := agent(t).Addr()
	locktest.Run(t, locktest.Options{
		Fair: true,
		Open: func(t *testing.T) lock.Backend { return open(t, addr) },
	})
}
