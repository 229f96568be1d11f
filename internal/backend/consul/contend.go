package consul

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// contender is one process's place in KEY's line: its session and, once
// it has joined, its entry. A try-once joins, reads the line in the same
// transaction, and takes over at once when it is within the first limit
// entries (and no one waits ahead of it); else it is busy and Leave
// destroys its session, which deletes its entry. A waiter keeps its
// session alive (keepAlive) and watches only what can make it next
// (watch.go).
type contender struct {
	b     *Backend
	req   lock.Request
	limit int

	sid     string
	granted time.Time // just before the session was created
	own     *api.KVPair
	waited  bool
	last    *lock.Holder // the last holder seen, for busy answers

	// What Wait watches: the entry just ahead (watchKey at watchIndex),
	// or, for a semaphore's first waiter, the holders (watchKey "").
	watchKey   string
	watchIndex uint64
	seen       []string // the holders' keys the last read saw
	poll       bool     // a lock-delay holds our slot back: Wait polls

	stopKA    context.CancelFunc
	lost      chan struct{} // closed when the keep-alive hears the session is gone
	stopWatch context.CancelFunc
}

// Contend implements lock.Backend: no I/O until the first Try.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	return &contender{b: b, req: req, limit: max(req.Limit, 1)}
}

// maxSteps bounds the reads a Try makes when its takeover loses a race
// (a slot or the counter taken in between): each lost race means another
// contender made progress.
const maxSteps = 5

// Try implements lock.Contender.
func (c *contender) Try(ctx context.Context) (lock.Lease, error) {
	for range maxSteps {
		l, again, err := c.step(ctx)
		if !again {
			if l != nil {
				c.stopWaiting()
			}
			return l, err
		}
	}
	return nil, &lock.UnavailableError{Msg: fmt.Sprintf("consul: %s: the line kept moving while taking over; try again", c.req.Key)}
}

// step is one read of the line and what follows from it: the lease, busy,
// an error, or again (read once more).
func (c *contender) step(ctx context.Context) (lock.Lease, bool, error) {
	if c.placeLost() {
		c.reset()
	}
	if c.sid == "" {
		c.granted = time.Now()
		sid, err := c.b.createSession(ctx, c.req.TTL)
		if err != nil {
			return nil, false, err
		}
		c.sid = sid
	}
	v, err := c.read(ctx)
	if errors.Is(err, errSessionGone) {
		c.reset()
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return c.decide(ctx, v)
}

// decide acts on a read: take over when our entry is among the holders'
// places, else busy (remembering what to watch).
func (c *contender) decide(ctx context.Context, v view) (lock.Lease, bool, error) {
	pos := v.position(c.sid)
	if pos < 0 { // our session expired since: join again
		c.reset()
		return nil, true, nil
	}
	first := v.line[0]
	if pos > 0 && first.rec.limit() != c.limit {
		return nil, false, &lock.LimitMismatchError{Key: c.req.Key, Want: c.req.Limit, Have: first.rec.limit()}
	}
	if pos < c.limit {
		return c.takeOver(ctx, v, v.line[pos])
	}
	hs := holders(v.line)
	h := hs[0].holder(c.req.Key)
	if h.Token == 0 && c.last != nil {
		h = *c.last // the first in line is taking over: keep the last holder
	}
	c.last = &h
	c.watchKey, c.watchIndex = v.line[pos-1].kv.Key, v.line[pos-1].kv.ModifyIndex
	if c.limit > 1 && pos == c.limit {
		c.watchKey, c.seen = "", keysOf(hs)
	}
	return nil, false, &lock.BusyError{Holder: h}
}

// Wait implements lock.Contender: the session is kept alive from now on,
// and Wake fires when what is ahead of us changed.
func (c *contender) Wait(ctx context.Context) (lock.Retry, error) {
	c.waited = true
	if c.stopKA == nil && c.sid != "" {
		kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c.stopKA, c.lost = cancel, make(chan struct{})
		go c.b.keepAlive(kctx, c.sid, c.req.TTL, c.lost)
	}
	if c.stopWatch != nil {
		c.stopWatch()
	}
	if c.poll {
		c.poll = false
		return lock.Retry{After: delayPoll}, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	c.stopWatch = cancel
	return lock.Retry{Wake: c.watch(wctx), After: lock.NoBound}, nil
}

// delayPoll is how often a waiter held back by a lock-delay tries again.
const delayPoll = 250 * time.Millisecond

// Leave implements lock.Contender: destroying the session deletes our
// entry (and anything else it holds).
func (c *contender) Leave() {
	c.stopWaiting()
	c.b.cleanup(context.Background(), c.sid)
	c.sid = ""
}

// stopWaiting ends the watch and the waiter's keep-alive (the lease's
// keeper renews from here on).
func (c *contender) stopWaiting() {
	if c.stopWatch != nil {
		c.stopWatch()
		c.stopWatch = nil
	}
	if c.stopKA != nil {
		c.stopKA()
		c.stopKA = nil
	}
}

// placeLost: the keep-alive heard that our session is gone.
func (c *contender) placeLost() bool { return c.lost != nil && isClosed(c.lost) }

// isClosed reports, without waiting, whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// reset forgets a lost place: the next step joins again at the back.
func (c *contender) reset() {
	c.stopWaiting()
	if c.sid != "" {
		c.b.cleanup(context.Background(), c.sid)
	}
	c.sid, c.own, c.lost = "", nil, nil
}

func keysOf(es []entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.kv.Key
	}
	return out
}
