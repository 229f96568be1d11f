package main

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// leaseEnd reads a key's holder on the server (directly, not through the
// fault proxy) every few milliseconds while deadbeforeexpiry waits for
// the child to die, and keeps the latest lower bound on when the server
// lets the lease go: the moment a read was sent plus the time left it
// reported (the server measured that time left after the read was sent).
// A lease only ever ends later than such a bound (a renewal extends it),
// unless the lock is broken or the server loses it, which the scenarios
// that use it do not do. It lets the check compare the child's death
// with the lease's end as the server saw it before the death, instead of
// with a read made after the death was seen: on a loaded machine that
// read can reach the server tens of milliseconds late and find a lease
// that was live when the child died already gone.
type leaseEnd struct {
	mu   sync.Mutex
	end  time.Time // zero until a read found the lease with its time left
	stop context.CancelFunc
	done chan struct{}
}

// sampleLeaseEnd starts reading key's lease (held by token want; 0: any)
// on b.
func sampleLeaseEnd(b lock.Backend, key string, want uint64) *leaseEnd {
	ctx, cancel := context.WithCancel(context.Background())
	s := &leaseEnd{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			h, held, err := b.Inspect(rctx, key)
			rcancel()
			if err == nil && held && h.ExpiresIn > 0 && (want == 0 || h.Token == want) {
				s.mu.Lock()
				s.end = sent.Add(h.ExpiresIn)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return s
}

// finish stops the reads and returns the bound (zero if none was read).
func (s *leaseEnd) finish() time.Time {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}
