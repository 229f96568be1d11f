package consul

import (
	"testing"

	"github.com/distlock/distlock/internal/lock/locktest"
)

func TestBreakSemaphore(t *testing.T) { locktest.BreakSemaphore(t, open(t, agent(t).Addr())) }
