package etcd

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/acquire"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// At a handover only the first in line and the waiter just behind it ask
// etcd again; the others stay asleep on their watches. Each waiter's
// attempts are counted: one when it joins, one that finds who is ahead of
// it, one when the one ahead moved from the line to the slot (it is first
// then: the first waiter has none), and the one that takes the lock in its
// turn (woken by the slot's deletion, it takes it without reading first):
// none for handovers ahead of it. When the one ahead has already released
// by the time the read as first in line is made, that read finds the slot
// free and the same attempt takes it: one attempt fewer, never more.
func TestHandoverWakesOnlyTheNextWaiter(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 30*time.Second)
		holder, err := lock.TryOnce(ctx, b, request("h", "holder", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		const n = 4
		type result struct {
			i     int
			lease lock.Lease
			err   error
		}
		results := make(chan result, n)
		tries := make([]atomic.Int32, n)
		for i := range n {
			go func() {
				l, err := acquire.Acquire(ctx, countingBackend{b, &tries[i]}, request("h", fmt.Sprintf("w%d", i), 3*time.Second), acquire.Options{Wait: acquire.Forever})
				results <- result{i, l, err}
			}()
			wait.Until(t, 5*time.Second, fmt.Sprintf("waiter %d to queue and read who is ahead", i), func() bool {
				return tries[i].Load() == 2
			})
		}
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for want := range n {
			r := <-results
			if r.err != nil || r.i != want {
				t.Fatalf("turn %d: waiter %d, %v", want, r.i, r.err)
			}
			if err := r.lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := range tries {
			if c, want := tries[i].Load(), int32(min(i, 1)+3); c > want || c < 3 {
				t.Errorf("waiter %d made %d attempts; want %d (join, read, [first in line,] take): woken by a handover not its own", i, c, want)
			}
		}
	})
}

// countingBackend counts the attempts (Try) of the contenders it makes.
type countingBackend struct {
	*Backend
	tries *atomic.Int32
}

func (c countingBackend) Contend(req lock.Request) lock.Contender {
	return countingContender{c.Backend.Contend(req), c.tries}
}

type countingContender struct {
	lock.Contender
	tries *atomic.Int32
}

func (c countingContender) Try(ctx context.Context) (lock.Lease, error) {
	c.tries.Add(1)
	return c.Contender.Try(ctx)
}
