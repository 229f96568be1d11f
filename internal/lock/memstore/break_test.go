package memstore

import (
	"testing"

	"github.com/distlock/distlock/internal/lock/locktest"
)

func TestBreakSemaphore(t *testing.T) { locktest.BreakSemaphore(t, New()) }
