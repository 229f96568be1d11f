package redis

// Fair waiting on Redis, for a mutex and for a semaphore's slots alike:
// waiters take the lock (a slot) in arrival order, a waiter that dies
// cannot block the queue, and a release wakes one waiter (no herd).
//
// # Layout (all in the key's hash tag, see queue_lib.lua)
//
//	<prefix>:{KEY}:queue    sorted set owner -> ticket (arrival order)
//	<prefix>:{KEY}:alive    sorted set owner -> deadline (server time, ms)
//	<prefix>:{KEY}:waiting  hash owner -> "host<TAB>pid", to name the next in line
//	<prefix>:{KEY}:wake:<owner>  each waiter's own channel
//
// Every try runs acquire.lua, a mutex being a semaphore of one: a
// waiter's step joins (or refreshes its place), prunes waiters whose
// deadline passed, and takes the lowest free slot only if one is free and
// the caller is the first live waiter. Only the first waiter subscribes to
// the key's release channel (release.lua and break.lua publish there);
// the others sleep on their own channel until a script makes them first
// (the first took a slot, left, or was pruned), or until their next
// heartbeat. A waiter refreshes its place every max(1s, ttl/3) and the
// place lasts twice that, so a dead waiter is pruned within about
// 2*max(1s, ttl/3).
//
// A try-once (--wait 0, and every waiter's first try) runs the same script
// with no place: while live waiters are queued it is busy, so it cannot
// take a slot from the first in line in the moment between a release and
// that waiter's next step, and it never joins the queue; the check and the
// acquisition are one script, one round trip.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

func (b *Backend) queueKey(key string) string   { return b.lockKey(key) + ":queue" }
func (b *Backend) aliveKey(key string) string   { return b.lockKey(key) + ":alive" }
func (b *Backend) waitingKey(key string) string { return b.lockKey(key) + ":waiting" }
func (b *Backend) wakePrefix(key string) string { return b.lockKey(key) + ":wake:" }

// QueueLen is how many waiters are queued for key, dead ones not yet
// pruned included (for tests and tools).
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	n, err := b.c.ZCard(ctx, b.queueKey(key)).Result()
	if err != nil {
		return 0, b.unavailable(err)
	}
	return n, nil
}

// heartbeat says how often a waiter refreshes its place in the queue and
// how long the place lasts without a refresh.
func heartbeat(ttl time.Duration) (every, lasts time.Duration) {
	every = max(time.Second, ttl/3)
	return every, 2 * every
}

// queuedHolder describes who has the lock, or, when it is free but a
// waiter is first in line, that waiter (from its "host<TAB>pid").
func queuedHolder(key string, fields, pttl, next any) lock.Holder {
	if list, _ := fields.([]any); len(list) > 0 {
		return parseHolder(key, fields, pttl)
	}
	h := lock.Holder{Key: key, ExpiresIn: -1}
	s, _ := next.(string)
	host, pid, _ := strings.Cut(s, "\t")
	h.Meta.Host = host
	h.Meta.PID, _ = strconv.Atoi(pid)
	return h
}

// step is one answer of acquire.lua.
type step struct {
	lease  lock.Lease // acquired
	have   int        // > 0: the key is held with this other limit
	holder lock.Holder
	pttl   time.Duration // the soonest slot's time left; <0 none or unknown
	first  bool          // we are first in line
}

// tryOnce is a try-once, one round trip: the lowest free slot, unless live
// waiters are queued for the key (then busy, naming the first in line when
// no slot holder is left to name).
func (b *Backend) tryOnce(ctx context.Context, req lock.Request) (lock.Lease, error) {
	s, err := b.queueStep(ctx, req, 0)
	if err != nil {
		return nil, err
	}
	return s.result(req)
}

// result is a step's answer to a Try.
func (s step) result(req lock.Request) (lock.Lease, error) {
	switch {
	case s.lease != nil:
		return s.lease, nil
	case s.have > 0:
		return nil, &lock.LimitMismatchError{Key: req.Key, Want: max(1, req.Limit), Have: s.have}
	}
	return nil, &lock.BusyError{Holder: s.holder}
}

// queueStep runs acquire.lua: with a place (lasts > 0) join or refresh our
// place in the key's queue, and take a slot if one is free and we are
// first; without, a try-once.
func (b *Backend) queueStep(ctx context.Context, req lock.Request, lasts time.Duration) (step, error) {
	n := max(1, req.Limit)
	granted := time.Now()
	cmd, nr := b.run(ctx, req.TTL, acquireScript(),
		b.slotKeys(req.Key, n, b.tokenKey(req.Key), b.queueKey(req.Key), b.aliveKey(req.Key), b.waitingKey(req.Key)),
		req.Owner, req.TTL.Milliseconds(), req.Meta.Host, req.Meta.PID, req.Meta.User, req.Meta.Command, req.Meta.Note,
		n, lasts.Milliseconds(), b.wakePrefix(req.Key),
	)
	res, err := cmd.Slice()
	if err != nil {
		return step{}, b.unavailable(err)
	}
	return b.stepReply(ctx, req, granted, res, nr)
}

// stepReply reads acquire.lua's reply res (a grant at granted; nr: too
// few replicas acknowledged it).
func (b *Backend) stepReply(ctx context.Context, req lock.Request, granted time.Time, res []any, nr error) (step, error) {
	switch {
	case len(res) == 3 && res[0] == int64(1):
		tok, err := strconv.ParseUint(fmt.Sprint(res[1]), 10, 64)
		slot, ok := res[2].(int64)
		if err != nil || !ok {
			break
		}
		l := b.lease(req, tok, int(slot), granted)
		if nr != nil {
			return step{}, b.unreplicatedGrant(ctx, req.Key, nr, l.Release)
		}
		return step{lease: l}, nil
	case len(res) == 2 && res[0] == int64(-1):
		have, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return step{have: max(have, 1)}, nil
	case len(res) == 6 && res[0] == int64(0):
		s := step{holder: queuedHolder(req.Key, res[1], res[2], res[4]), pttl: -1, first: res[3] == int64(1)}
		if ms, ok := res[5].(int64); ok && ms >= 0 {
			s.pttl = time.Duration(ms) * time.Millisecond
		}
		return s, nil
	}
	return step{}, fmt.Errorf("unexpected reply from the acquire script: %v", res)
}

// leaveQueue takes us out of the queue on a fresh short context (ctx may
// be the one that just ended); if that fails, our place expires by itself.
func (b *Backend) leaveQueue(ctx context.Context, req lock.Request) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = queueLeaveScript().Run(cctx, b.c,
		[]string{b.queueKey(req.Key), b.aliveKey(req.Key), b.waitingKey(req.Key)},
		req.Owner, b.wakePrefix(req.Key)).Err()
}

// queueContender is a contender for a slot of a lock of limit N (a
// mutex: N = 1). Before its first Wait each Try is a try-once (admitted
// only when nobody is queued). Its first Wait subscribes to its own wake
// channel; from then on each Try is a step: it joins the queue (or
// refreshes our place) and takes a slot only when one is free and we are
// first in line. Only the first in line listens to the key's release
// channel.
type queueContender struct {
	b         *Backend
	req       lock.Request
	w         *waker // nil until the first Wait: a try-once never subscribes
	joined    bool   // a step ran: we may hold a place
	listening bool   // to the key's release channel: only while first
	last      step
	// joinedWith is the lease or error of the step that joined the queue
	// in Wait, for the next Try to return.
	joinedWith struct {
		l   lock.Lease
		err error
	}
}

// Try implements lock.Contender.
func (c *queueContender) Try(ctx context.Context) (lock.Lease, error) {
	if c.w == nil {
		return c.b.tryOnce(ctx, c.req)
	}
	if j := c.joinedWith; j.l != nil || j.err != nil {
		c.joinedWith.l, c.joinedWith.err = nil, nil
		return j.l, j.err
	}
	return c.step(ctx)
}

// step joins or refreshes our place, and takes a slot if one is free and
// we are first in line.
func (c *queueContender) step(ctx context.Context) (lock.Lease, error) {
	_, lasts := heartbeat(c.req.TTL)
	c.joined = true
	s, err := c.b.queueStep(ctx, c.req, lasts)
	if err != nil {
		return nil, err
	}
	if s.lease != nil {
		c.w.close()
	}
	c.last = s
	return s.result(c.req)
}

// Wait implements lock.Contender: after a queue step, sleep until a
// message on our channel (or, while first, the key's release channel),
// the next heartbeat, or, while first, the holder's lease running out.
func (c *queueContender) Wait(ctx context.Context) (lock.Retry, error) {
	if c.w == nil {
		// The first wait: subscribe to our own channel, then join the
		// queue, so that a waiter holds its place when Wait returns.
		w, err := c.b.newWaker(ctx, c.b.wakePrefix(c.req.Key)+c.req.Owner)
		if err != nil {
			return lock.Retry{}, err
		}
		c.w = w
		l, err := c.step(ctx)
		var busy *lock.BusyError
		if !errors.As(err, &busy) {
			c.joinedWith.l, c.joinedWith.err = l, err
			return lock.Retry{After: 0}, nil // the next Try returns it
		}
	}
	s := c.last
	if s.first && !c.listening {
		// Listen for releases from now on, then look again at once: a
		// release may have come before the subscription took effect.
		err := c.w.subscribe(ctx, c.b.channel(c.req.Key))
		if err == nil {
			c.listening = true
			return lock.Retry{Wake: c.w.msgs, After: 0}, nil
		}
		if ctx.Err() != nil {
			return lock.Retry{}, ctx.Err()
		}
		// A pub/sub hiccup: wait for the heartbeat and try again.
	}
	every, _ := heartbeat(c.req.TTL)
	d := every
	if s.first && s.pttl >= 0 {
		d = min(d, s.pttl+5*time.Millisecond) // the holder may die: look when its lease (the soonest slot) ends
	}
	return lock.Retry{Wake: c.w.msgs, After: d}, nil
}

// Leave implements lock.Contender: out of the queue, unsubscribed.
func (c *queueContender) Leave() {
	if l := c.joinedWith.l; l != nil {
		// Granted by the step that joined the line, and never taken by a
		// Try (the wait ended in between): give it back now rather than
		// leave the lock held by nobody until its TTL.
		c.joinedWith.l = nil
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.Release(cctx)
		cancel()
	}
	if c.joined {
		c.b.leaveQueue(context.Background(), c.req)
	}
	if c.w != nil {
		c.w.close()
	}
}

// waker is a waiter's subscription: its own channel, and the key's release
// channel once it is first. msgs gets a value per message (dropped when one
// is already pending); subscription confirmations go to confirms.
type waker struct {
	ps       *goredis.PubSub
	msgs     chan struct{}
	confirms chan string
	done     chan struct{}
	closed   sync.Once
}

// newWaker subscribes to channel and returns once Redis confirmed it.
func (b *Backend) newWaker(ctx context.Context, channel string) (*waker, error) {
	ps := b.c.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, b.unavailable(err)
	}
	w := &waker{ps: ps, msgs: make(chan struct{}, 1), confirms: make(chan string, 4), done: make(chan struct{})}
	go w.run()
	return w, nil
}

func (w *waker) run() {
	for {
		m, err := w.ps.Receive(context.Background())
		select {
		case <-w.done:
			return
		default:
		}
		if err != nil {
			// go-redis reconnects and resubscribes on the next Receive;
			// meanwhile the heartbeat timer keeps the waiter going.
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-w.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		switch m := m.(type) {
		case *goredis.Message:
			select {
			case w.msgs <- struct{}{}:
			default:
			}
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				select {
				case w.confirms <- m.Channel:
				default:
				}
			}
		}
	}
}

// subscribe adds channel and waits for Redis to confirm it.
func (w *waker) subscribe(ctx context.Context, channel string) error {
	if err := w.ps.Subscribe(ctx, channel); err != nil {
		return err
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case c := <-w.confirms:
			if c == channel {
				return nil
			}
		case <-t.C:
			return errors.New("redis did not confirm the subscription to " + channel)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// close ends the subscription; a second call does nothing (a grant closes
// it, and Leave may follow).
func (w *waker) close() {
	w.closed.Do(func() {
		close(w.done)
		w.ps.Close()
	})
}
