package zookeeper

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
)

func TestConformance(t *testing.T) {
	p := startServer(t)
	var n atomic.Int64
	locktest.Run(t, locktest.Options{
		Open: func(t *testing.T) lock.Backend { return open(t, p.Addr(), fmt.Sprintf("conformance%d", n.Add(1))) },
		Fair: true,
	})
}
