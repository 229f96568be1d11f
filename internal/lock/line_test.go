package lock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// queue is a tiny engine line in memory: the holders, then the waiters in
// arrival order, limit places.
type queue struct {
	limit   int
	holders []*place
	waiters []*place
	joins   int
}

// place is one contender's LineStore on a queue.
type place struct {
	q      *queue
	name   string
	lose   bool   // the next Look finds our place gone
	again  int    // Takes that answer ErrLookAgain
	named  Holder // when set, whom Look names
	looks  int
	leaves int
	once   bool // TryOnce was called
	watch  context.Context
}

func (p *place) drop() {
	p.q.waiters = slices.DeleteFunc(p.q.waiters, func(w *place) bool { return w == p })
}

func (p *place) Join(context.Context) error {
	p.drop()
	p.q.joins++
	p.q.waiters = append(p.q.waiters, p)
	return nil
}

func (p *place) Look(context.Context) (LineLook, error) {
	p.looks++
	i := slices.Index(p.q.waiters, p)
	if p.lose || i < 0 {
		p.lose = false
		p.drop()
		return LineLook{Lost: true}, nil
	}
	look := LineLook{Ahead: i, Free: p.q.limit - len(p.q.holders), Holder: p.named}
	if len(p.q.holders) > 0 && p.named.Key == "" {
		look.Holder = Holder{Key: "k", Owner: p.q.holders[0].name, Token: 7}
	}
	return look, nil
}

func (p *place) Take(context.Context) (Lease, error) {
	if p.again > 0 {
		p.again--
		return nil, ErrLookAgain
	}
	p.drop()
	p.q.holders = append(p.q.holders, p)
	return NewLease(Grant{Key: "k", Owner: p.name}, nil), nil
}

func (p *place) Watch(ctx context.Context) (Retry, error) {
	p.watch = ctx
	return Retry{Wake: ctx.Done(), After: NoBound}, nil
}

func (p *place) Leave() { p.leaves++; p.drop() }

func (q *queue) release(p *place) {
	q.holders = slices.DeleteFunc(q.holders, func(h *place) bool { return h == p })
}

func (q *queue) line(name string) (*Line, *place) {
	p := &place{q: q, name: name}
	return NewLine(Request{Key: "k", TTL: 3 * time.Second, Owner: name}, p), p
}

// onceTaker is a place whose try-once takes nothing and joins nothing.
type onceTaker struct{ *place }

func (o onceTaker) TryOnce(context.Context) (Lease, error) {
	o.once = true
	return nil, &BusyError{Holder: Holder{Key: "k", Owner: "h", Token: 3}}
}

func TestLineTryOnceJoinsThenLeaves(t *testing.T) {
	q := &queue{limit: 1}
	h, _ := q.line("h")
	if _, err := h.Try(t.Context()); err != nil {
		t.Fatal(err)
	}
	c, p := q.line("c")
	_, err := c.Try(t.Context())
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Holder.Owner != "h" {
		t.Fatalf("try-once under a holder = %v, want busy naming h", err)
	}
	c.Leave()
	if len(q.waiters) != 0 || p.leaves != 1 {
		t.Fatalf("%d waiters, %d leaves after a try-once gave up: want none and one", len(q.waiters), p.leaves)
	}
}

func TestLineOnceTakerJoinsAtFirstWait(t *testing.T) {
	q := &queue{limit: 1, holders: []*place{{name: "h"}}}
	p := &place{q: q, name: "c"}
	c := NewLine(Request{Key: "k", TTL: time.Second}, onceTaker{p})
	if _, err := c.Try(t.Context()); !errors.Is(err, ErrHeld) || !p.once || q.joins != 0 || p.looks != 0 {
		t.Fatalf("try-once = %v (once %v, joins %d, looks %d): want busy from TryOnce alone", err, p.once, q.joins, p.looks)
	}
	r, err := c.Wait(t.Context())
	if err != nil || r.After != 0 || r.Wake != nil || q.joins != 1 {
		t.Fatalf("first Wait = %+v, %v (joins %d): want a place and a Try at once", r, err, q.joins)
	}
	p.once = false
	if _, err := c.Try(t.Context()); !errors.Is(err, ErrHeld) || p.once || p.looks != 1 {
		t.Fatalf("second Try = %v (once %v, looks %d): want a look from our place", err, p.once, p.looks)
	}
}

// Waiters take the places in arrival order: fewer waiters ahead than
// places free, and not before.
func TestLineArrivalOrder(t *testing.T) {
	ctx := t.Context()
	q := &queue{limit: 2}
	var hs []*place
	for _, n := range []string{"h1", "h2"} {
		c, p := q.line(n)
		if _, err := c.Try(ctx); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, p)
	}
	a, _ := q.line("a")
	b, _ := q.line("b")
	for _, c := range []*Line{a, b} {
		if _, err := c.Try(ctx); !errors.Is(err, ErrHeld) {
			t.Fatalf("a waiter took a full semaphore: %v", err)
		}
	}
	q.release(hs[0])
	if _, err := b.Try(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("b, behind a, took the one free place: %v", err)
	}
	if l, err := a.Try(ctx); err != nil || l.Owner() != "a" {
		t.Fatalf("a, first in line, = %v, %v; want the place", l, err)
	}
	q.release(hs[1])
	if l, err := b.Try(ctx); err != nil || l.Owner() != "b" {
		t.Fatalf("b, first in line now, = %v, %v; want the place", l, err)
	}
}

func TestLineJoinsAgainWhenThePlaceIsLost(t *testing.T) {
	q := &queue{limit: 1}
	c, p := q.line("c")
	p.lose = true
	if l, err := c.Try(t.Context()); err != nil || l == nil {
		t.Fatalf("Try after a lost place = %v, %v; want the place taken after joining again", l, err)
	}
	if q.joins != 2 || p.looks != 2 {
		t.Fatalf("%d joins, %d looks: want the lost place joined again and looked at in one Try", q.joins, p.looks)
	}
}

func TestLineLooksAgainAFewTimesAtMost(t *testing.T) {
	q := &queue{limit: 1}
	c, p := q.line("c")
	p.again = 100
	_, err := c.Try(t.Context())
	if !Transient(err) || p.looks != lookRounds {
		t.Fatalf("a line that keeps moving = %v after %d looks: want a transient error after %d", err, p.looks, lookRounds)
	}
	p.again = lookRounds - 1
	if l, err := c.Try(t.Context()); err != nil || l == nil {
		t.Fatalf("a line that settles = %v, %v", l, err)
	}
}

// A busy answer names the last holder named while the line names nobody,
// or a contender with no token yet (taking over from the last holder).
func TestLineNamesTheLastHolder(t *testing.T) {
	q := &queue{limit: 1, holders: []*place{{name: "h"}}}
	c, p := q.line("c")
	names := func() Holder {
		t.Helper()
		_, err := c.Try(t.Context())
		var busy *BusyError
		if !errors.As(err, &busy) {
			t.Fatalf("Try = %v, want busy", err)
		}
		return busy.Holder
	}
	if h := names(); h.Owner != "h" || h.Token != 7 {
		t.Fatalf("named %+v, want h", h)
	}
	p.named = Holder{Key: "k", Meta: Meta{Host: "taking-over"}}
	if h := names(); h.Owner != "h" {
		t.Fatalf("named %+v while the next holder had no token: want h still", h)
	}
	q.holders, p.named = nil, Holder{}
	q.waiters = append([]*place{{name: "w"}}, q.waiters...)
	if h := names(); h.Owner != "h" {
		t.Fatalf("named %+v with nobody holding: want the last holder", h)
	}
	fresh, _ := q.line("d")
	q.waiters = slices.Insert(q.waiters, 0, &place{name: "x"})
	if _, err := fresh.Try(t.Context()); err == nil || err.(*BusyError).Holder.Key != "k" || err.(*BusyError).Holder.ExpiresIn != -1 {
		t.Fatalf("busy with nobody ever named = %v, want the key with no holder", err)
	}
}

// kept is a place whose liveness must be renewed.
type kept struct {
	*place
	renewed chan error // each renewal takes its answer here
}

func (k kept) Keeper() func(context.Context) error {
	return func(context.Context) error { return <-k.renewed }
}

// The place is renewed every TTL/3 from the first Wait; when the engine
// says it is gone the watch ends and the next Try joins again; a taken
// place is renewed no more.
func TestLineKeepsThePlaceAlive(t *testing.T) {
	q := &queue{limit: 1, holders: []*place{{name: "h"}}}
	p := &place{q: q, name: "c"}
	k := kept{p, make(chan error)}
	c := NewLine(Request{Key: "k", TTL: 3 * time.Second}, k)
	ticks := make(chan time.Time)
	var every []time.Duration
	c.after = func(d time.Duration) <-chan time.Time { every = append(every, d); return ticks }
	if _, err := c.Try(t.Context()); !errors.Is(err, ErrHeld) {
		t.Fatal(err)
	}
	if _, err := c.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	ticks <- time.Time{}
	k.renewed <- nil
	ticks <- time.Time{}
	if every[0] != time.Second {
		t.Errorf("renewed every %s, want TTL/3", every[0])
	}
	if p.watch.Err() != nil {
		t.Fatal("the watch ended while the place lived")
	}
	k.renewed <- ErrNotHeld
	select {
	case <-p.watch.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch went on after the place was lost")
	}
	joins := q.joins
	q.release(q.holders[0])
	if l, err := c.Try(t.Context()); err != nil || l == nil || q.joins != joins+1 {
		t.Fatalf("Try after the place was lost = %v, %v (%d joins, was %d): want it joined again and taken", l, err, q.joins, joins)
	}
	if c.stopKeep != nil || c.lost != nil {
		t.Fatal("the keep-alive still runs after the place was taken")
	}
}
