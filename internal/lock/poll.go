package lock

import (
	"context"
	"errors"
	"time"
)

// Polling is the Contender of an engine that keeps no line: every Try is a
// try-once, and a waiter polls with the wait loop's backoff (capped at
// Cap), looking again just after a place could free up. TryOnce returns,
// with a busy answer, the time until the soonest place could free up (the
// holder's lease expiring; <0 unknown). Wake, when set, opens the engine's
// notification of releases (Redis pub/sub, PostgreSQL LISTEN) the first
// time the contender waits; stop ends it.
type Polling struct {
	TryOnce func(ctx context.Context) (l Lease, freeIn time.Duration, err error)
	Cap     time.Duration
	Wake    func(ctx context.Context) (ch <-chan struct{}, stop func(), err error)

	freeIn time.Duration // from the last busy answer
	wake   <-chan struct{}
	stop   func()
}

// HolderExpiry is the freeIn of a mutex: the busy holder's time left.
func HolderExpiry(err error) time.Duration {
	var busy *BusyError
	if errors.As(err, &busy) {
		return busy.Holder.ExpiresIn
	}
	return -1
}

// Try implements Contender.
func (p *Polling) Try(ctx context.Context) (Lease, error) {
	l, freeIn, err := p.TryOnce(ctx)
	p.freeIn = freeIn
	if err == nil && p.stop != nil {
		p.stop()
		p.stop = nil
	}
	return l, err
}

// Wait implements Contender. Right after subscribing it asks for another
// try at once: a release just before the subscription took effect would
// otherwise wait for the poll. A failed subscription is not fatal: the
// waiter still polls.
func (p *Polling) Wait(ctx context.Context) (Retry, error) {
	if p.Wake != nil && p.stop == nil && p.wake == nil {
		if ch, stop, err := p.Wake(ctx); err == nil {
			p.wake, p.stop = ch, stop
			return Retry{Wake: p.wake, After: 0, Poll: p.Cap}, nil
		}
	}
	return Retry{Wake: p.wake, After: ExpiryBound(p.freeIn), Poll: p.Cap}, nil
}

// Leave implements Contender.
func (p *Polling) Leave() {
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
}

// ExpiryBound is the Retry.After for a holder whose lease has expiresIn
// left (<0: unknown): look again just after it could have expired.
func ExpiryBound(expiresIn time.Duration) time.Duration {
	if expiresIn < 0 {
		return NoBound
	}
	return expiresIn + 5*time.Millisecond
}

// TryOnce makes one attempt at req on b, leaving no place behind when the
// key is busy: a *BusyError names the holder.
func TryOnce(ctx context.Context, b Backend, req Request) (Lease, error) {
	c := b.Contend(req)
	l, err := c.Try(ctx)
	if err != nil {
		c.Leave()
	}
	return l, err
}
