package redis

// Fair waiting on Redis, whatever the limit: waiters take slots in
// arrival order, a waiter that dies cannot block the queue, and a release
// wakes one waiter (no herd). The rules are in queue_lib.lua and
// acquire.lua; the waiting is lock.Polling's (Contend).

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

// QueueLen implements lock.LineCounter (status's waiting): how many
// waiters are queued for key, dead ones not yet pruned included.
func (b *Backend) QueueLen(ctx context.Context, key string) (int64, error) {
	n, err := b.c.ZCard(ctx, b.queueKey(key)).Result()
	if err != nil {
		return 0, b.unavailable(err)
	}
	return n, nil
}

// queueStep runs acquire.lua, answering as lock.Polling takes it: with a
// place (lasts > 0) join or refresh our place in the key's queue, and
// take a slot if one is free and we are first; without, a try-once.
func (b *Backend) queueStep(ctx context.Context, req lock.Request, lasts time.Duration) (lock.Lease, time.Duration, error) {
	granted := time.Now()
	keys, args := b.acquireCall(req, lasts)
	cmd, nr := b.run(ctx, req.TTL, acquireScript(), keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return nil, -1, b.unavailable(err)
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
// few replicas acknowledged it): the lease, or why not (a
// *lock.BusyError, or a *lock.LimitMismatchError when the key is held
// with another limit) and, busy, when we are first in line, the soonest
// slot's time left (<0 unknown; -1 too for a waiter behind the first,
// which has nothing to watch, and on any other error).
func (b *Backend) stepReply(ctx context.Context, req lock.Request, granted time.Time, res []any, nr error) (lock.Lease, time.Duration, error) {
	switch {
	case len(res) == 3 && res[0] == int64(1):
		tok, err := strconv.ParseUint(fmt.Sprint(res[1]), 10, 64)
		slot, ok := res[2].(int64)
		if err != nil || !ok {
			break
		}
		l := b.lease(req, tok, int(slot), granted)
		if nr != nil {
			return nil, -1, b.unreplicatedGrant(ctx, req.Key, nr, l.Release)
		}
		return l, 0, nil
	case len(res) == 2 && res[0] == int64(-1):
		have, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return nil, -1, &lock.LimitMismatchError{Key: req.Key, Want: max(1, req.Limit), Have: max(have, 1)}
	case len(res) == 6 && res[0] == int64(0):
		h := parseHolder(req.Key, res[1], res[2])
		if f, _ := res[1].([]any); len(f) == 0 {
			// Free, but another waiter is first in line: name it (its
			// "host<TAB>pid").
			host, pid, _ := strings.Cut(fmt.Sprint(res[4]), "\t")
			h.Meta.Host = host
			h.Meta.PID, _ = strconv.Atoi(pid)
		}
		freeIn := time.Duration(-1)
		if ms, ok := res[5].(int64); ok && res[3] == int64(1) && ms >= 0 {
			freeIn = time.Duration(ms) * time.Millisecond
		}
		return nil, freeIn, &lock.BusyError{Holder: h}
	}
	return nil, -1, fmt.Errorf("unexpected reply from the acquire script: %v", res)
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

// Contend implements lock.Backend: lock.Polling over acquire.lua, whose
// try-once is busy while anyone is queued. A waiter steps (refreshes its
// place) again within max(1s, ttl/3), the poll's cap (a quarter more at
// most, with the jitter), and its place lasts twice that, so a dead
// waiter is pruned within about 2*max(1s, ttl/3). It sleeps on its own
// wake channel (published to when it becomes first); only the first in
// line listens to the key's release channel.
func (b *Backend) Contend(req lock.Request) lock.Contender {
	every := max(time.Second, req.TTL/3)
	w := &waker{msgs: make(chan struct{}, 1)}
	listening := false
	return &lock.Polling{
		Cap:     every,
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) { return b.queueStep(ctx, req, 0) },
		Wake: func(ctx context.Context) (<-chan struct{}, func(), error) {
			return w.msgs, w.close, w.subscribe(ctx, b, b.wakePrefix(req.Key)+req.Owner)
		},
		Queue: &lock.PollQueue{
			Step: func(ctx context.Context) (lock.Lease, time.Duration, error) {
				l, freeIn, err := b.queueStep(ctx, req, 2*every)
				switch {
				case err == nil:
					w.close()
				case freeIn >= 0 && !listening && errors.Is(err, lock.ErrHeld):
					// First in line: listen for releases from now on, then
					// look again at once (a release may have come before
					// the subscription took effect). On a pub/sub hiccup,
					// the next step tries again.
					if listening = w.subscribe(ctx, b, b.channel(req.Key)) == nil; listening {
						freeIn = 0
					}
				}
				return l, freeIn, err
			},
			Leave: func() {
				b.leaveQueue(context.Background(), req)
				w.close()
			},
		},
	}
}

// waker is a waiter's subscriptions: its own channel, and the key's
// release channel once it is first (Redlock's: each master's release
// channel), relayed onto msgs (lock.RelayTo: one value stands for any
// number of messages).
type waker struct {
	msgs chan struct{}
	subs []*goredis.PubSub
}

// subscribe adds b's channel and returns once Redis confirmed it (within
// 5s). go-redis reconnects and resubscribes by itself after a connection
// error.
func (w *waker) subscribe(ctx context.Context, b *Backend, channel string) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ps := b.c.Subscribe(cctx, channel)
	if _, err := ps.Receive(cctx); err != nil {
		ps.Close()
		return b.unavailable(err)
	}
	w.subs = append(w.subs, ps)
	msgs := ps.Channel()
	lock.RelayTo(w.msgs, func() error { // until ps.Close closes msgs
		if _, ok := <-msgs; !ok {
			return goredis.ErrClosed
		}
		return nil
	})
	return nil
}

// close ends the subscriptions; a second call does nothing (a grant closes
// them, and Leave may follow).
func (w *waker) close() {
	for _, ps := range w.subs {
		ps.Close()
	}
	w.subs = nil
}
