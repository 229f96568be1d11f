//go:build linux

package file

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// A mutex's waiter is woken by the kernel when the holder lets go
// (inotify on the lock file, wake_linux.go), not only by its next poll;
// then its try succeeds. A waiter that gave up holds nothing: the next
// try-once gets the lock at once.
func TestReleaseWakesWaiter(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	holder, err := lock.TryOnce(ctx, b, semRequest("k", "holder", 1))
	if err != nil {
		t.Fatal(err)
	}
	c := b.Contend(semRequest("k", "waiter", 1))
	var busy *lock.BusyError
	if _, err := c.Try(ctx); !errors.As(err, &busy) {
		t.Fatalf("try while held: %v, want busy", err)
	}
	r, err := c.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Wake == nil {
		t.Fatal("a waiter on the file engine gets no release notification")
	}
	// Right after subscribing the waiter tries once more (a release
	// before the watch took effect): still busy.
	if _, err := c.Try(ctx); !errors.As(err, &busy) {
		t.Fatalf("try while held: %v, want busy", err)
	}
	select {
	case <-r.Wake:
		t.Fatal("woken while the lock is still held")
	default:
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Wake:
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not wake the waiter")
	}
	l, err := c.Try(ctx)
	if err != nil {
		t.Fatalf("try after the wake-up: %v", err)
	}
	c.Leave()
	// The waiter gives up its lock; another waiter, abandoned while
	// waiting, holds nothing.
	c2 := b.Contend(semRequest("k", "abandoned", 1))
	if _, err := c2.Try(ctx); !errors.As(err, &busy) {
		t.Fatalf("try while held: %v, want busy", err)
	}
	if _, err := c2.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c2.Leave()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l3, err := lock.TryOnce(ctx, b, semRequest("k", "next", 1))
	if err != nil {
		t.Fatalf("try-once after the abandoned wait: %v", err)
	}
	l3.Release(ctx)
}
