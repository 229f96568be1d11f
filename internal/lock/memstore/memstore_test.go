package memstore

import (
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
)

// The store keeps the contract as a real engine does.
func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Options{Open: func(t *testing.T) lock.Backend { return New() }})
}
