package postgres

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// LeaseLeft reads an expired lease's time left as negative (the harness's
// deadbeforeexpiry relies on it), and says when there is no such lease.
func TestLeaseLeftGoesNegative(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "leaseleft")
	l, err := lock.TryOnce(t.Context(), b, request("k", "o", 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	left, found, err := b.LeaseLeft(t.Context(), "k", l.Token())
	if err != nil || !found || left <= 0 || left > 300*time.Millisecond {
		t.Fatalf("live lease: left %v, found %v, %v", left, found, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left, found, err = b.LeaseLeft(t.Context(), "k", l.Token())
		if err != nil || !found {
			t.Fatalf("expired lease: found %v, %v", found, err)
		}
		if left < 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %v left 5s after a 300ms lease", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, found, err := b.LeaseLeft(t.Context(), "k", l.Token()+1); err != nil || found {
		t.Fatalf("another token: found %v, %v", found, err)
	}
}
