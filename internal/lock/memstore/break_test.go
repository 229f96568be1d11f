package memstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Break on a semaphore, as lock.BreakHolders rules it: a token breaks its
// holder only, and no token breaks every holder, answering the oldest.
func TestBreakSemaphore(t *testing.T) {
	ctx := context.Background()
	s := New()
	var ls []lock.Lease
	for _, owner := range []string{"a", "b", "c"} {
		l, err := lock.TryOnce(ctx, s, lock.Request{Key: "sem", Owner: owner, TTL: time.Minute, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	if h, err := s.Break(ctx, "sem", ls[1].Token()); err != nil || h.Owner != "b" {
		t.Fatalf("break by b's token: %+v, %v", h, err)
	}
	var busy *lock.BusyError
	if _, err := s.Break(ctx, "sem", ls[1].Token()); !errors.As(err, &busy) || busy.Holder.Owner != "a" {
		t.Fatalf("break by a token nobody holds now: %v, want busy naming the oldest, a", err)
	}
	if h, err := s.Break(ctx, "sem", 0); err != nil || h.Owner != "a" {
		t.Fatalf("break of every holder: %+v, %v, want a (the oldest)", h, err)
	}
	if hs, _ := s.List(ctx, ""); len(hs) != 0 {
		t.Fatalf("after breaking every holder, List gives %+v", hs)
	}
	if _, err := s.Break(ctx, "sem", 0); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("break of a free key: %v, want ErrNotHeld", err)
	}
}
