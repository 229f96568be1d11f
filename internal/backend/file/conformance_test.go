package file

import (
	"testing"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Options{Open: func(t *testing.T) lock.Backend { return openTest(t) }})
}
