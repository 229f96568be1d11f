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
		l, err := b.parseSlotLease(req, res[1], res[2], granted)
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
			return step{}, b.unreplicatedGrant(ctx, req.Key, nr, b.slotLease(req, tok, int(slot), time.Time{}).Release)
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

// parseSlotLease makes the lease of a granted slot from the script's
// token and slot.
func (b *Backend) parseSlotLease(req lock.Request, token, slot any, granted time.Time) (lock.Lease, error) {
	tok, err := strconv.ParseUint(fmt.Sprint(token), 10, 64)
	i, ok := slot.(int64)
	if err != nil || !ok {
		return nil, fmt.Errorf("redis returned a bad token or slot: %v, %v", token, slot)
	}
	return b.slotLease(req, tok, int(i), granted), nil
}

// slotLease makes the lease of req's slot, granted with token at granted.
func (b *Backend) slotLease(req lock.Request, token uint64, slot int, granted time.Time) lock.Lease {
	g := lock.Grant{Key: req.Key, Owner: req.Owner, Token: token, TTL: req.TTL, Granted: granted, Slot: slot, Limit: req.Limit}
	return lock.NewLease(g, slotStore{b})
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

// slotStore is the lock.LeaseStore of a semaphore's slot: our ownership
// of the slot, proven by the owner id (the lease's).
type slotStore struct{ b *Backend }

// Hold implements lock.LeaseStore: an owner-checked PEXPIRE of our slot to
// d, marked with mode (sem_hold.lua), as the mutex's Hold does for the
// lock hash. The marker follows, so status shows the hold when the slot is
// the oldest.
func (s slotStore) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	return d, s.b.held(s.b.run(ctx, l.TTL(), semHoldScript(), s.b.semKeys(l.Key(), l.Limit()), l.Owner(), max(d.Milliseconds(), 1), mode, l.Slot(), l.Limit()))
}

// Renew implements lock.LeaseStore.
func (s slotStore) Renew(ctx context.Context, l *lock.Held) error {
	return renewed(s.b.run(ctx, l.TTL(), semRenewScript(), s.b.semKeys(l.Key(), l.Limit()), l.Owner(), l.TTL().Milliseconds(), l.Slot(), l.Limit()))
}

// Release implements lock.LeaseStore.
func (s slotStore) Release(ctx context.Context, l *lock.Held) error {
	return s.b.owned(semReleaseScript().Run(ctx, s.b.c, s.b.semKeys(l.Key(), l.Limit()), l.Owner(), l.Slot(), l.Limit(), s.b.channel(l.Key())).Int())
}
