package lock

// The fair-line contender of the engines with a native line of waiters
// (etcd, Consul, ZooKeeper). The engine's LineStore reads, takes and
// watches; Line keeps the dance: when to join and join again, when to
// take (fewer waiters ahead than places free: arrival order), the place's
// keep-alive, whom a busy answer names, and leaving.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLookAgain is what a LineStore's Look or Take answers when the line
// moved under it (a compare failed, a slot is not given back yet, the
// place was found gone): Line looks again at once, a few times at most.
var ErrLookAgain = errors.New("the line moved: look again")

// LineStore is an engine's line of waiters as one contender sees it from
// its place. Line calls it from one goroutine.
type LineStore interface {
	// Join puts the contender at the back of the line, giving up any place
	// it held before (lost, or found gone).
	Join(ctx context.Context) error
	// Look reads the line from our place: Lost when the place is gone,
	// else who is ahead and what is free. An error ends the Try (a
	// *LimitMismatchError, or a transient failure: the place is kept).
	Look(ctx context.Context) (LineLook, error)
	// Take takes a free place for us once Look said we may: the lease; or
	// ErrLookAgain; or a *BusyError (the place is held back: Watch says
	// when to try again; an empty holder names the last one named); or
	// another error, which ends the Try (the place is kept).
	Take(ctx context.Context) (Lease, error)
	// Watch says when trying again is worthwhile after a busy Try: Wake
	// fires when what is ahead of us changed, or when ctx ends (Line ends
	// it when the next Try begins or our place is lost).
	Watch(ctx context.Context) (Retry, error)
	// Leave gives our place up, and whatever it holds, on a fresh short
	// context of its own.
	Leave()
}

// LineLook is what one reading of the line tells the waiter at its place.
type LineLook struct {
	Lost  bool // our place is gone: join again at the back
	Ahead int  // waiters ahead of us
	Free  int  // places free for them and us
	// Holder is whom a busy answer names: the holder, or a semaphore's
	// oldest holder (Oldest). Empty: nobody holds (the last one named is
	// named again).
	Holder Holder
}

// PlaceKeeper is a LineStore whose place lives only while it is renewed
// (an etcd lease, a Consul session): Line renews it every TTL/3 from the
// first Wait until the place is taken, left or lost.
type PlaceKeeper interface {
	// Keeper returns one renewal of our current place, safe to call from
	// another goroutine: ErrNotHeld when the engine says the place is gone.
	Keeper() func(ctx context.Context) error
}

// OnceTaker is a LineStore whose try-once (a Try before the first Wait)
// takes a free place without joining the line (when nobody waits in it)
// and leaves nothing behind: its first Wait joins.
type OnceTaker interface {
	TryOnce(ctx context.Context) (Lease, error)
}

// lookRounds bounds the looks of one Try: each round after the first
// means the line moved (another contender made progress) or our place was
// lost and taken again.
const lookRounds = 5

// Line is the Contender of an engine with a native line (NewLine).
type Line struct {
	req     Request
	store   LineStore
	joined  bool // we have a place in line
	waiting bool // Wait was called
	named   *Holder

	lost     chan struct{} // closed by the keep-alive when our place is gone
	stopKeep func()
	unwatch  context.CancelFunc
	after    func(time.Duration) <-chan time.Time // the keep-alive's clock
}

// NewLine makes the contender for req on the engine's line s.
func NewLine(req Request, s LineStore) *Line {
	return &Line{req: req, store: s, after: time.After}
}

// Try implements Contender.
func (l *Line) Try(ctx context.Context) (Lease, error) {
	if err := ValidateRequest(l.req); err != nil {
		return nil, err
	}
	l.stopWatch()
	if o, ok := l.store.(OnceTaker); ok && !l.joined && !l.waiting {
		lease, err := o.TryOnce(ctx)
		return lease, l.answer(err)
	}
	for range lookRounds {
		if err := l.place(ctx); err != nil {
			return nil, err
		}
		look, err := l.store.Look(ctx)
		switch {
		case errors.Is(err, ErrLookAgain):
			continue
		case err != nil:
			return nil, err
		case look.Lost:
			l.dropPlace()
			continue
		case look.Ahead >= look.Free:
			return nil, l.answer(&BusyError{Holder: look.Holder})
		}
		lease, err := l.store.Take(ctx)
		if err == nil {
			l.dropPlace() // the place is the lease now
			return lease, nil
		}
		if !errors.Is(err, ErrLookAgain) {
			return nil, l.answer(err)
		}
	}
	return nil, &UnavailableError{Msg: fmt.Sprintf("%s: the line kept moving while taking a place; try again", l.req.Key)}
}

// place makes sure we stand in line, joining (again) when we do not.
func (l *Line) place(ctx context.Context) error {
	select {
	case <-l.lost:
		l.dropPlace()
	default:
	}
	if l.joined {
		return nil
	}
	if err := l.store.Join(ctx); err != nil {
		return err
	}
	l.joined = true
	return nil
}

// answer is err, a busy answer naming the holder the line last named when
// it names nobody, or a contender with no token yet (a waiter taking over
// from the holder that just left: until it holds, the last one stays).
func (l *Line) answer(err error) error {
	var busy *BusyError
	if !errors.As(err, &busy) {
		return err
	}
	h := busy.Holder
	switch {
	case (h.Key == "" || h.Token == 0) && l.named != nil:
		h = *l.named
	case h.Key == "":
		h = Holder{Key: l.req.Key, ExpiresIn: -1}
	default:
		l.named = &h
	}
	return &BusyError{Holder: h}
}

// Wait implements Contender: the first Wait of a contender that took no
// place yet joins and asks for a Try at once; then the place is kept alive
// and the engine watches what is ahead of it.
func (l *Line) Wait(ctx context.Context) (Retry, error) {
	l.waiting = true
	if !l.joined {
		if err := l.place(ctx); err != nil {
			return Retry{}, err
		}
		return Retry{After: 0}, nil
	}
	l.keep()
	l.stopWatch()
	wctx, cancel := context.WithCancel(ctx)
	l.unwatch = cancel
	if lost := l.lost; lost != nil {
		go func() {
			select {
			case <-lost:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	return l.store.Watch(wctx)
}

// Leave implements Contender.
func (l *Line) Leave() {
	l.stopWatch()
	l.stopKeeping()
	l.store.Leave()
	l.joined = false
}

// dropPlace forgets our place, taken or lost (Join gives up what is left).
func (l *Line) dropPlace() {
	l.stopWatch()
	l.stopKeeping()
	l.joined = false
}

// keep starts the keep-alive of our place, if the store needs one and it
// is not running: a renewal every TTL/3 (each bounded by that), until the
// place is gone (it closes lost) or stopKeeping.
func (l *Line) keep() {
	k, ok := l.store.(PlaceKeeper)
	if !ok || l.stopKeep != nil {
		return
	}
	renew, every := k.Keeper(), max(l.req.TTL/3, 50*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	lost, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.after(every):
			}
			rctx, rcancel := context.WithTimeout(ctx, every)
			err := renew(rctx)
			rcancel()
			if errors.Is(err, ErrNotHeld) {
				close(lost)
				return
			}
		}
	}()
	l.lost, l.stopKeep = lost, func() { cancel(); <-done }
}

func (l *Line) stopKeeping() {
	if l.stopKeep != nil {
		l.stopKeep()
		l.stopKeep = nil
	}
	l.lost = nil
}

func (l *Line) stopWatch() {
	if l.unwatch != nil {
		l.unwatch()
		l.unwatch = nil
	}
}
