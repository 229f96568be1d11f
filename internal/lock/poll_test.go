package lock

import (
	"context"
	"testing"
	"time"
)

// relLease counts its releases; the rest of Lease is not used here.
type relLease struct {
	Lease
	released int
}

func (l *relLease) Release(context.Context) error { l.released++; return nil }

// line records what a Polling contender asked of an engine's line.
type line struct {
	tries, steps, leaves int
	grant                Lease // what the next step answers (nil: busy)
}

func (q *line) polling() *Polling {
	busy := &BusyError{Holder: Holder{Key: "k", ExpiresIn: time.Second}}
	return &Polling{
		Cap: time.Second,
		TryOnce: func(context.Context) (Lease, time.Duration, error) {
			q.tries++
			return nil, time.Second, busy
		},
		Queue: &PollQueue{
			Step: func(context.Context) (Lease, time.Duration, error) {
				q.steps++
				if q.grant != nil {
					return q.grant, -1, nil
				}
				return nil, time.Second, busy
			},
			Leave: func() { q.leaves++ },
		},
	}
}

func TestPollingTryOnceTakesNoPlace(t *testing.T) {
	var q line
	p := q.polling()
	if _, err := p.Try(t.Context()); err == nil {
		t.Fatal("busy try-once gave a lease")
	}
	p.Leave()
	if q.tries != 1 || q.steps != 0 || q.leaves != 0 {
		t.Fatalf("tries %d, steps %d, leaves %d: a try-once must not touch the line", q.tries, q.steps, q.leaves)
	}
}

func TestPollingFirstWaitTakesPlaceOnce(t *testing.T) {
	var q line
	p := q.polling()
	_, _ = p.Try(t.Context())
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if q.steps != 1 {
		t.Fatalf("the first Wait made %d steps, want 1 (a waiter is in line when it says it waits)", q.steps)
	}
	_, _ = p.Try(t.Context()) // returns the joining step's answer
	if q.steps != 1 || q.tries != 1 {
		t.Fatalf("after the first Wait, Try made steps %d tries %d; want the joining step's answer reused", q.steps, q.tries)
	}
	_, _ = p.Wait(t.Context())
	_, _ = p.Try(t.Context())
	if q.steps != 2 || q.tries != 1 {
		t.Fatalf("a waiter's Try must step in line: steps %d tries %d", q.steps, q.tries)
	}
	p.Leave()
	if q.leaves != 1 {
		t.Fatalf("Leave gave the place back %d times, want 1", q.leaves)
	}
}

func TestPollingGrantedWhileJoiningThenLeftIsReleased(t *testing.T) {
	l := &relLease{}
	q := line{grant: l}
	p := q.polling()
	_, _ = p.Try(t.Context())
	_, _ = p.Wait(t.Context()) // the joining step is granted
	p.Leave()                  // the wait ends before a Try took it
	if l.released != 1 {
		t.Fatalf("a lease granted while joining and never taken was released %d times, want 1", l.released)
	}
}

func TestPollingGrantGivesPlaceUp(t *testing.T) {
	l := &relLease{}
	q := line{}
	p := q.polling()
	_, _ = p.Try(t.Context())
	_, _ = p.Wait(t.Context())
	_, _ = p.Try(t.Context())
	q.grant = l
	if got, err := p.Try(t.Context()); err != nil || got != l {
		t.Fatalf("Try = %v, %v", got, err)
	}
	p.Leave()
	if q.leaves != 0 || l.released != 0 {
		t.Fatalf("after a grant Leave must neither leave the line (%d) nor release (%d): the grant took our place", q.leaves, l.released)
	}
}
