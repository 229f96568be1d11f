package renew

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/lock"
)

// Confirm answers nil once a renewal sent after it was asked succeeds (the
// lease is still ours: a stopped command may be continued), and an error
// once the lease is found lost. Real file engine; break makes it lost.
func TestKeeperConfirm(t *testing.T) {
	b, err := file.Open(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := lock.TryOnce(ctx, b, lock.Request{Key: "k", TTL: 30 * time.Second, Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	k := Start(l, Timing{TTL: 30 * time.Second, KillGrace: 2 * time.Second}, nil)
	defer k.Stop()
	asked := time.Now()
	select {
	case err := <-k.Confirm():
		if err != nil {
			t.Fatalf("Confirm of a healthy lease: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Confirm of a healthy lease did not answer within 10s")
	}
	// It was a renewal sent after the ask: the sidecar shows it.
	h, _, err := b.Inspect(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if renewed := time.Now().Add(h.ExpiresIn - h.TTL); renewed.Before(asked.Add(-time.Second)) {
		t.Errorf("the lease was last renewed %s before Confirm was asked", asked.Sub(renewed))
	}

	if _, err := b.Break(ctx, "k", 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-k.Confirm():
		if err == nil {
			t.Fatal("Confirm of a broken lease answered nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Confirm of a broken lease did not answer within 10s")
	}
	select {
	case <-k.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("no Loss delivered with the failed Confirm")
	}
	// After the keeper has ended, Confirm answers at once.
	select {
	case err := <-k.Confirm():
		if err == nil {
			t.Fatal("Confirm after the keeper ended answered nil")
		}
	case <-time.After(time.Second):
		t.Fatal("Confirm after the keeper ended did not answer")
	}
}
