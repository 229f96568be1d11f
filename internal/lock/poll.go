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
//
// Queue, when set, makes waiting fair (arrival order): the first Wait
// takes a place in the engine's line with Queue.Step, and from then on
// every Try is a Queue.Step (refresh our place; take the lock only when
// as few waiters are ahead of us as there are free places). A try-once,
// before any Wait, never takes a place. Leave gives the place back.
type Polling struct {
	TryOnce func(ctx context.Context) (l Lease, freeIn time.Duration, err error)
	Cap     time.Duration
	Wake    func(ctx context.Context) (ch <-chan struct{}, stop func(), err error)
	Queue   *PollQueue

	freeIn time.Duration // from the last busy answer
	wake   <-chan struct{}
	stop   func()
	queued bool // a Queue.Step ran: we may hold a place
	// stepped is the answer of the step that joined the line in Wait, for
	// the next Try to return.
	stepped *pollStep
}

// PollQueue is an engine's line of waiters for Polling. A waiter must step
// at least every Cap, and its place must outlast that many times over
// (the engine prunes places that are not refreshed: a dead waiter cannot
// block the line).
type PollQueue struct {
	Step  func(ctx context.Context) (l Lease, freeIn time.Duration, err error)
	Leave func() // best effort, on a fresh context: an unrefreshed place expires by itself
}

type pollStep struct {
	l      Lease
	freeIn time.Duration
	err    error
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
	var (
		l      Lease
		freeIn time.Duration
		err    error
	)
	switch {
	case p.stepped != nil:
		l, freeIn, err = p.stepped.l, p.stepped.freeIn, p.stepped.err
		p.stepped = nil
	case p.queued:
		l, freeIn, err = p.Queue.Step(ctx)
	default:
		l, freeIn, err = p.TryOnce(ctx)
	}
	p.freeIn = freeIn
	if err == nil {
		p.queued = false // a grant gave our place up
		if p.stop != nil {
			p.stop()
			p.stop = nil
		}
	}
	return l, err
}

// Wait implements Contender. Right after subscribing it asks for another
// try at once: a release just before the subscription took effect would
// otherwise wait for the poll. A failed subscription is not fatal: the
// waiter still polls.
func (p *Polling) Wait(ctx context.Context) (Retry, error) {
	if p.Queue != nil && !p.queued {
		// Take our place now, so that a waiter is in line when its first
		// Wait returns (and says it waits); the next Try returns this step.
		p.queued = true
		l, freeIn, err := p.Queue.Step(ctx)
		p.stepped = &pollStep{l: l, freeIn: freeIn, err: err}
		if err != nil && !errors.Is(err, ErrHeld) {
			return Retry{After: 0}, nil
		}
		p.freeIn = freeIn
	}
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
	if p.stepped != nil && p.stepped.l != nil {
		// Granted while joining, and never taken by a Try: give it back.
		_ = p.stepped.l.Release(context.Background())
		p.stepped = nil
	}
	if p.queued {
		p.Queue.Leave()
		p.queued = false
	}
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
