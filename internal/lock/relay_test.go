package lock

import (
	"errors"
	"testing"
	"time"
)

// Relay keeps one value for any number of events, and ends when next fails.
func TestRelay(t *testing.T) {
	events, calls := make(chan error), make(chan struct{}, 8)
	ch, done := Relay(func() error {
		calls <- struct{}{}
		return <-events
	})
	events <- nil
	events <- nil // the first is still waiting: kept, not queued
	for range 3 { // the third call waits: both events have been relayed
		select {
		case <-calls:
		case <-time.After(5 * time.Second):
			t.Fatal("next not called again after an event")
		}
	}
	select {
	case <-ch:
	default:
		t.Fatal("no value after two events")
	}
	select {
	case <-ch:
		t.Fatal("two events queued two values")
	default:
	}
	events <- errors.New("closed")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("done not closed after next failed")
	}
}

// Relays that share a channel keep one value between them, and each ends
// on its own.
func TestRelayToShared(t *testing.T) {
	out := make(chan struct{}, 1)
	a, b := make(chan error), make(chan error)
	doneA := RelayTo(out, func() error { return <-a })
	doneB := RelayTo(out, func() error { return <-b })
	a <- nil
	b <- nil
	a <- errors.New("closed") // sent once a's first event was relayed
	select {
	case <-doneA:
	case <-time.After(5 * time.Second):
		t.Fatal("a's relay did not end after its next failed")
	}
	b <- errors.New("closed") // b's event was relayed too
	select {
	case <-doneB:
	case <-time.After(5 * time.Second):
		t.Fatal("b's relay did not end after its next failed")
	}
	select {
	case <-out:
	default:
		t.Fatal("no value after two events")
	}
	select {
	case <-out:
		t.Fatal("two events on two relays queued two values")
	default:
	}
}
