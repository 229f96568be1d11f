package redis

// Fair waiting for the Redis mutex: waiters take the lock in arrival
// order, a waiter that dies cannot block the queue, and a release wakes
// one waiter (no herd).
//
// # Layout (all in the key's hash tag, see queue_lib.lua)
//
//	<prefix>:{KEY}:queue    sorted set owner -> ticket (arrival order)
//	<prefix>:{KEY}:alive    sorted set owner -> deadline (server time, ms)
//	<prefix>:{KEY}:waiting  hash owner -> "host<TAB>pid", to name the next in line
//	<prefix>:{KEY}:wake:<owner>  each waiter's own channel
//
// A waiter runs queue_acquire.lua: it joins (or refreshes its deadline),
// prunes waiters whose deadline passed, and takes the lock only if it is
// free and the caller is the first live waiter. Only the first waiter
// subscribes to the key's release channel (release.lua and break.lua
// publish there); the others sleep on their own channel until a script
// makes them first (the first took the lock, left, or was pruned), or
// until their next heartbeat. A waiter refreshes its place every
// max(1s, ttl/3) and the place lasts twice that, so a dead waiter is
// pruned within about 2*max(1s, ttl/3).
//
// A try-once (TryAcquire, --wait 0) first runs queue_admit.lua: while live
// waiters are queued it is busy, so it cannot take the lock from the first
// in line in the moment between a release and that waiter's next step. That
// costs a try-once one extra round trip. The check and acquire.lua are two
// steps, but a waiter that joins in between merely queues behind a try-once
// that arrived first.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

var (
	//go:embed queue_lib.lua
	queueLibSrc string
	//go:embed queue_acquire.lua
	queueAcquireSrc string
	//go:embed queue_leave.lua
	queueLeaveSrc string
	//go:embed queue_admit.lua
	queueAdmitSrc string

	queueAcquireScript = goredis.NewScript(grantLibSrc + queueLibSrc + queueAcquireSrc)
	queueLeaveScript   = goredis.NewScript(queueLibSrc + queueLeaveSrc)
	queueAdmitScript   = goredis.NewScript(queueLibSrc + queueAdmitSrc)
)

var _ lock.Queuer = (*Backend)(nil)

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

// admit is TryAcquire's check for a mutex: nil when no live waiter is
// queued (acquire.lua then decides), a *lock.BusyError when some are, a
// *lock.LimitMismatchError when the key is held as a semaphore.
func (b *Backend) admit(ctx context.Context, req lock.Request) error {
	res, err := queueAdmitScript.Run(ctx, b.c,
		[]string{b.lockKey(req.Key), b.queueKey(req.Key), b.aliveKey(req.Key), b.waitingKey(req.Key)},
		b.wakePrefix(req.Key),
	).Slice()
	if err != nil {
		return b.unavailable(err)
	}
	switch {
	case len(res) == 1 && res[0] == int64(1):
		return nil
	case len(res) == 2 && res[0] == int64(-1):
		have, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return &lock.LimitMismatchError{Key: req.Key, Want: max(1, req.Limit), Have: have}
	case len(res) == 4 && res[0] == int64(0):
		return &lock.BusyError{Holder: queuedHolder(req.Key, res[1], res[2], res[3])}
	}
	return fmt.Errorf("unexpected reply from the queue admit script: %v", res)
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

// step is one answer of queue_acquire.lua.
type step struct {
	token    uint64 // acquired when != 0
	have     int    // > 0: the key is a semaphore of this limit
	holder   lock.Holder
	pttl     time.Duration // the holder's time left; <0 none or unknown
	first    bool          // we are first in line
	acquired bool
}

func (b *Backend) queueStep(ctx context.Context, req lock.Request, lasts time.Duration) (step, error) {
	res, err := queueAcquireScript.Run(ctx, b.c,
		[]string{b.lockKey(req.Key), b.tokenKey(req.Key), b.queueKey(req.Key), b.aliveKey(req.Key), b.waitingKey(req.Key)},
		req.Owner, req.TTL.Milliseconds(), req.Meta.Host, req.Meta.PID, req.Meta.User, req.Meta.Command, req.Meta.Note,
		lasts.Milliseconds(), b.wakePrefix(req.Key),
	).Slice()
	if err != nil {
		return step{}, b.unavailable(err)
	}
	switch {
	case len(res) == 2 && res[0] == int64(1):
		tok, err := strconv.ParseUint(fmt.Sprint(res[1]), 10, 64)
		if err != nil {
			return step{}, fmt.Errorf("redis returned a bad token %v", res[1])
		}
		return step{acquired: true, token: tok}, nil
	case len(res) == 2 && res[0] == int64(-1):
		have, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return step{have: max(have, 2)}, nil
	case len(res) == 5 && res[0] == int64(0):
		s := step{holder: queuedHolder(req.Key, res[1], res[2], res[4]), pttl: -1, first: res[3] == int64(1)}
		if ms, ok := res[2].(int64); ok && ms >= 0 {
			s.pttl = time.Duration(ms) * time.Millisecond
		}
		return s, nil
	}
	return step{}, fmt.Errorf("unexpected reply from the queue acquire script: %v", res)
}

// leaveQueue takes us out of the queue on a fresh short context (ctx may
// be the one that just ended); if that fails, our place expires by itself.
func (b *Backend) leaveQueue(ctx context.Context, req lock.Request) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = queueLeaveScript.Run(cctx, b.c,
		[]string{b.queueKey(req.Key), b.aliveKey(req.Key), b.waitingKey(req.Key)},
		req.Owner, b.wakePrefix(req.Key)).Err()
}

// Acquire implements lock.Queuer: for a mutex, wait in the key's queue
// until the lock is ours (arrival order), ctx ends, or an error occurs;
// for a semaphore (req.Limit > 1), see waitSemaphore. When ctx's deadline
// passes it returns a *lock.BusyError naming the last holder seen; when ctx
// is cancelled, ctx's error. Either way it leaves the queue. progress (may
// be nil) is called whenever the holder changes.
func (b *Backend) Acquire(ctx context.Context, req lock.Request, progress func(lock.Holder)) (lock.Lease, error) {
	if req.Limit > 1 {
		return b.waitSemaphore(ctx, req, progress)
	}
	every, lasts := heartbeat(req.TTL)
	w, err := b.newWaker(ctx, b.wakePrefix(req.Key)+req.Owner)
	if err != nil {
		return nil, lock.EndOfWait(ctx, req.Key, nil, err)
	}
	defer w.close()
	listening := false // to the key's release channel: only while first
	var last *lock.Holder
	for {
		granted := time.Now()
		s, err := b.queueStep(ctx, req, lasts)
		switch {
		case err != nil:
			b.leaveQueue(ctx, req)
			return nil, lock.EndOfWait(ctx, req.Key, last, err)
		case s.acquired:
			return &Lease{b: b, key: req.Key, owner: req.Owner, token: s.token, ttl: req.TTL, granted: granted}, nil
		case s.have > 0:
			return nil, &lock.LimitMismatchError{Key: req.Key, Want: max(1, req.Limit), Have: s.have}
		}
		if last == nil || !sameHolder(*last, s.holder) {
			h := s.holder
			last = &h
			if progress != nil {
				progress(h)
			}
		}
		if s.first && !listening {
			// Listen for releases from now on, then look again at once: a
			// release may have come before the subscription took effect.
			err := w.subscribe(ctx, b.channel(req.Key))
			if err == nil {
				listening = true
				continue
			}
			if ctx.Err() != nil {
				b.leaveQueue(ctx, req)
				return nil, lock.EndOfWait(ctx, req.Key, last, ctx.Err())
			}
			// A pub/sub hiccup: wait for the timer and try again.
		}
		d := every
		if s.first && s.pttl >= 0 {
			d = min(d, s.pttl+5*time.Millisecond) // the holder may die: look when its lease ends
		}
		t := time.NewTimer(d)
		select {
		case <-w.msgs:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			b.leaveQueue(ctx, req)
			return nil, lock.EndOfWait(ctx, req.Key, last, ctx.Err())
		}
		t.Stop()
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

func (w *waker) close() {
	close(w.done)
	w.ps.Close()
}
