package redis

// Semaphores (--limit N > 1) on Redis.
//
// # Layout
//
// Slot i of KEY (0..N-1) is a hash with the lease's TTL, holding the same
// fields as the mutex's lock hash plus limit and slot:
//
//	<prefix>:{KEY}:slot:<i>
//
// The fencing counter is the mutex's, <prefix>:{KEY}:token, so tokens rise
// strictly across every acquisition of KEY (max(counter+1, server time in
// µs), computed in the script). While any slot is held, the mutex's lock
// hash <prefix>:{KEY} is the semaphore's marker (see sem_lib.lua): it keeps
// mutex acquirers out, tells semaphore acquirers which limit is in use, and
// describes the oldest holder to Inspect and List. Every script is given
// all N slot keys, so each touches only keys it declares.
//
// # Waiting
//
// Semaphore waiters queue in arrival order in the key's fair queue, the
// mutex's (queue.go, queue_lib.lua): only the first live waiter may take a
// freed slot (sem_queue_acquire.lua); once it has one it leaves the line
// and the next becomes first. Releases and breaks publish on the key's
// channel (<prefix>:{KEY}:released), to which only the first waiter
// listens; it also looks again when the soonest slot would expire, for
// holders that die without releasing. A try-once (sem_acquire.lua) is busy
// while live waiters are queued, as for the mutex.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

var (
	//go:embed sem_lib.lua
	semLibSrc string
	//go:embed sem_take_lib.lua
	semTakeLibSrc string
	//go:embed sem_acquire.lua
	semAcquireSrc string
	//go:embed sem_queue_acquire.lua
	semQueueAcquireSrc string
	//go:embed sem_renew.lua
	semRenewSrc string
	//go:embed sem_release.lua
	semReleaseSrc string
	//go:embed sem_break.lua
	semBreakSrc string
	//go:embed sem_hold.lua
	semHoldSrc string

	semAcquireScript      = lazyScript(func() string { return grantLibSrc + queueLibSrc + semLibSrc + semTakeLibSrc + semAcquireSrc })
	semQueueAcquireScript = lazyScript(func() string { return grantLibSrc + queueLibSrc + semLibSrc + semTakeLibSrc + semQueueAcquireSrc })
	semRenewScript        = lazyScript(func() string { return semLibSrc + semRenewSrc })
	semReleaseScript      = lazyScript(func() string { return semLibSrc + semReleaseSrc })
	semBreakScript        = lazyScript(func() string { return semLibSrc + semBreakSrc })
	semHoldScript         = lazyScript(func() string { return semLibSrc + semHoldSrc })
)

func (b *Backend) slotKey(key string, i int) string {
	return b.lockKey(key) + ":slot:" + strconv.Itoa(i)
}

// semKeys is the lock hash followed by the n slot hashes of key.
func (b *Backend) semKeys(key string, n int, extra ...string) []string {
	keys := make([]string, 0, n+1+len(extra))
	keys = append(keys, b.lockKey(key))
	keys = append(keys, extra...)
	for i := range n {
		keys = append(keys, b.slotKey(key, i))
	}
	return keys
}

// semKeysQueued is semKeys with the counter and the queue keys, as the
// acquire scripts take them: lock, counter, queue, alive, waiting, slots.
func (b *Backend) semKeysQueued(key string, n int) []string {
	return b.semKeys(key, n, b.tokenKey(key), b.queueKey(key), b.aliveKey(key), b.waitingKey(key))
}

// semTryOnce is a semaphore's try-once, one round trip (sem_acquire.lua):
// the lowest free slot, unless live waiters are queued for the key (then
// busy, naming the first in line when no slot holder is left to name).
func (b *Backend) semTryOnce(ctx context.Context, req lock.Request) (lock.Lease, error) {
	granted := time.Now()
	cmd, nr := b.run(ctx, req.TTL, semAcquireScript(), b.semKeysQueued(req.Key, req.Limit),
		req.Owner, req.TTL.Milliseconds(), req.Meta.Host, req.Meta.PID, req.Meta.User, req.Meta.Command, req.Meta.Note, req.Limit,
		b.wakePrefix(req.Key),
	)
	res, err := cmd.Slice()
	if err != nil {
		return nil, b.unavailable(err)
	}
	switch {
	case len(res) == 3 && res[0] == int64(1):
		l, err := b.slotLease(req, res[1], res[2], granted)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		if nr != nil {
			return nil, b.unreplicatedGrant(ctx, req.Key, nr, l.Release)
		}
		return l, nil
	case len(res) == 5 && res[0] == int64(0):
		return nil, &lock.BusyError{Holder: queuedHolder(req.Key, res[1], res[2], res[4])}
	case len(res) == 2 && res[0] == int64(-1):
		have, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return nil, &lock.LimitMismatchError{Key: req.Key, Want: req.Limit, Have: have}
	}
	return nil, fmt.Errorf("unexpected reply from the semaphore acquire script: %v", res)
}

// semQueueStep runs sem_queue_acquire.lua: join or refresh our place in
// the key's queue, and take a slot if one is free and we are first.
func (b *Backend) semQueueStep(ctx context.Context, req lock.Request, lasts time.Duration) (step, error) {
	cmd, nr := b.run(ctx, req.TTL, semQueueAcquireScript(), b.semKeysQueued(req.Key, req.Limit),
		req.Owner, req.TTL.Milliseconds(), req.Meta.Host, req.Meta.PID, req.Meta.User, req.Meta.Command, req.Meta.Note, req.Limit,
		lasts.Milliseconds(), b.wakePrefix(req.Key),
	)
	res, err := cmd.Slice()
	if err != nil {
		return step{}, b.unavailable(err)
	}
	switch {
	case len(res) == 3 && res[0] == int64(1):
		tok, err := strconv.ParseUint(fmt.Sprint(res[1]), 10, 64)
		slot, ok := res[2].(int64)
		if err != nil || !ok {
			return step{}, fmt.Errorf("unexpected reply from the semaphore queue script: %v", res)
		}
		if nr != nil {
			l := &SlotLease{b: b, key: req.Key, owner: req.Owner, token: tok, ttl: req.TTL, slot: int(slot), limit: req.Limit}
			return step{}, b.unreplicatedGrant(ctx, req.Key, nr, l.Release)
		}
		return step{acquired: true, token: tok, slot: int(slot)}, nil
	case len(res) == 2 && res[0] == int64(-1):
		have, _ := strconv.Atoi(fmt.Sprint(res[1]))
		return step{have: max(have, 1)}, nil
	case len(res) == 6 && res[0] == int64(0):
		s := step{holder: queuedHolder(req.Key, res[1], res[2], res[4]), pttl: -1, first: res[3] == int64(1)}
		if ms, ok := res[5].(int64); ok && ms >= 0 {
			s.pttl = time.Duration(ms) * time.Millisecond // the soonest slot expiry
		}
		return s, nil
	}
	return step{}, fmt.Errorf("unexpected reply from the semaphore queue script: %v", res)
}

// slotLease makes the lease of a granted slot from the script's token and
// slot.
func (b *Backend) slotLease(req lock.Request, token, slot any, granted time.Time) (*SlotLease, error) {
	tok, err := strconv.ParseUint(fmt.Sprint(token), 10, 64)
	i, ok := slot.(int64)
	if err != nil || !ok {
		return nil, fmt.Errorf("redis returned a bad token or slot: %v, %v", token, slot)
	}
	return &SlotLease{b: b, key: req.Key, owner: req.Owner, token: tok, ttl: req.TTL, granted: granted, slot: int(i), limit: req.Limit}, nil
}

// breakSemaphore is Break's hook for semaphores; handled is false when key
// is not a semaphore now (Break then goes on as for a mutex). With token
// != 0 it breaks the holder with that token, or returns a *lock.BusyError
// naming the oldest holder when none has it; with token 0 it breaks every
// holder and returns the oldest.
func (b *Backend) breakSemaphore(ctx context.Context, key string, token uint64) (h lock.Holder, handled bool, err error) {
	for range 5 {
		limit, err := b.c.HGet(ctx, b.lockKey(key), "limit").Int()
		if errors.Is(err, goredis.Nil) {
			return lock.Holder{}, false, nil
		}
		if err != nil {
			var rerr goredis.Error
			if errors.As(err, &rerr) || errors.Is(err, strconv.ErrSyntax) {
				return lock.Holder{}, false, nil // not a marker: a mutex's business
			}
			return lock.Holder{}, true, b.unavailable(err)
		}
		res, err := semBreakScript().Run(ctx, b.c, b.semKeys(key, limit), strconv.FormatUint(token, 10), limit, b.channel(key)).Slice()
		if err != nil {
			return lock.Holder{}, true, b.unavailable(err)
		}
		if len(res) == 1 && res[0] == int64(-3) {
			continue // the semaphore changed under us: look again
		}
		if len(res) != 3 {
			return lock.Holder{}, true, fmt.Errorf("unexpected reply from the semaphore break script: %v", res)
		}
		h := parseHolder(key, res[1], res[2])
		if res[0] == int64(2) {
			return h, true, &lock.BusyError{Holder: h}
		}
		return h, true, nil
	}
	return lock.Holder{}, true, fmt.Errorf("%s keeps changing between a semaphore and a mutex; try again", key)
}

// SlotLease is a held slot of a semaphore, proven by the owner id.
type SlotLease struct {
	b       *Backend
	key     string
	owner   string
	token   uint64
	ttl     time.Duration
	granted time.Time
	slot    int
	limit   int
}

var (
	_ lock.Lease   = (*SlotLease)(nil)
	_ lock.Slotted = (*SlotLease)(nil)
)

func (l *SlotLease) Key() string        { return l.key }
func (l *SlotLease) Token() uint64      { return l.token }
func (l *SlotLease) Owner() string      { return l.owner }
func (l *SlotLease) Granted() time.Time { return l.granted }

// Alerts implements lock.Lease: Redis sends no news; renewals find out.
func (l *SlotLease) Alerts() <-chan struct{} { return nil }

// Hold implements lock.Lease: an owner-checked PEXPIRE of our slot to d,
// marked with mode (sem_hold.lua), as the mutex's Hold does for the lock
// hash. The marker follows, so status shows the hold when the slot is the
// oldest.
func (l *SlotLease) Hold(ctx context.Context, d time.Duration, mode string) error {
	cmd, nr := l.b.run(ctx, l.ttl, semHoldScript(), l.b.semKeys(l.key, l.limit), l.owner, max(d.Milliseconds(), 1), mode, l.slot, l.limit)
	n, err := cmd.Int()
	if err != nil {
		return l.b.unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	if nr != nil {
		return &lock.UnavailableError{Msg: nr.Error() + ": the hold may not survive a failover", Err: nr}
	}
	l.ttl = d
	return nil
}

// Handle implements lock.Lease.
func (l *SlotLease) Handle() lock.Handle {
	return lock.Handle{Key: l.key, Owner: l.owner, Token: l.token, TTLms: l.ttl.Milliseconds()}
}

// Slot implements lock.Slotted.
func (l *SlotLease) Slot() int { return l.slot }

// Renew implements lock.Lease.
func (l *SlotLease) Renew(ctx context.Context) error {
	cmd, nr := l.b.run(ctx, l.ttl, semRenewScript(), l.b.semKeys(l.key, l.limit), l.owner, l.ttl.Milliseconds(), l.slot, l.limit)
	n, err := cmd.Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nr // a renewal too few replicas have is a failed renewal
}

// Release implements lock.Lease.
func (l *SlotLease) Release(ctx context.Context) error {
	n, err := semReleaseScript().Run(ctx, l.b.c, l.b.semKeys(l.key, l.limit), l.owner, l.slot, l.limit, l.b.channel(l.key)).Int()
	if err != nil {
		return l.b.unavailable(err)
	}
	if n != 1 {
		return lock.ErrNotHeld
	}
	return nil
}
