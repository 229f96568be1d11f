package redis

// Fair waiting on Redis, whatever the limit (a mutex is a semaphore of
// one): waiters take slots in arrival order, a waiter that dies cannot
// block the queue, and a release wakes one waiter (no herd). The queue's
// keys and rules are in queue_lib.lua; a step's and a try-once's in
// acquire.lua. A waiter refreshes its place every max(1s, ttl/3) and the
// place lasts twice that, so a dead waiter is pruned within about
// 2*max(1s, ttl/3).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	granted := time.Now()
	keys, args := b.acquireCall(req, lasts)
	cmd, nr := b.run(ctx, req.TTL, acquireScript(), keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return step{}, b.unavailable(err)
	}
	return b.stepReply(ctx, req, granted, res, nr)
}

// acquireCall is acquire.lua's keys and arguments for req; lasts is how
// long our place in the queue lasts (0: a try-once).
func (b *Backend) acquireCall(req lock.Request, lasts time.Duration) ([]string, []any) {
	n := max(1, req.Limit)
	return b.slotKeys(req.Key, n, b.tokenKey(req.Key), b.queueKey(req.Key), b.aliveKey(req.Key), b.waitingKey(req.Key)),
		[]any{req.Owner, req.TTL.Milliseconds(), req.Meta.Host, req.Meta.PID, req.Meta.User, req.Meta.Command, req.Meta.Note,
			n, lasts.Milliseconds(), b.wakePrefix(req.Key)}
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
			w.close()
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
		err := c.w.subscribe(ctx, c.b, c.b.channel(c.req.Key))
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

// waker is a waiter's subscriptions: its own channel, and the key's
// release channel once it is first. msgs gets a value per message
// (dropped when one is already pending).
type waker struct {
	msgs chan struct{}
	subs []*goredis.PubSub
}

// newWaker subscribes to channel and returns once Redis confirmed it.
func (b *Backend) newWaker(ctx context.Context, channel string) (*waker, error) {
	w := &waker{msgs: make(chan struct{}, 1)}
	return w, w.subscribe(ctx, b, channel)
}

// subscribe adds b's channel and returns once Redis confirmed it.
func (w *waker) subscribe(ctx context.Context, b *Backend, channel string) error {
	ps, err := b.listen(ctx, channel, w.msgs)
	if err == nil {
		w.subs = append(w.subs, ps)
	}
	return err
}

// close ends the subscriptions; a second call does nothing (a grant closes
// them, and Leave may follow).
func (w *waker) close() {
	for _, ps := range w.subs {
		ps.Close()
	}
	w.subs = nil
}

// listen subscribes to channel and returns once Redis confirmed it (within
// 5s); from then on every message on channel signals out (dropped when a
// signal is pending), until ps is closed. go-redis reconnects and
// resubscribes by itself after a connection error.
func (b *Backend) listen(ctx context.Context, channel string, out chan<- struct{}) (*goredis.PubSub, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ps := b.c.Subscribe(cctx, channel)
	if _, err := ps.Receive(cctx); err != nil {
		ps.Close()
		return nil, b.unavailable(err)
	}
	msgs := ps.Channel()
	go func() {
		for range msgs { // closed by ps.Close
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return ps, nil
}
