package locktest

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// BreakSemaphore checks Break on a semaphore as lock.BreakHolders rules
// it: a token breaks its holder only, a token nobody holds answers busy
// naming the oldest holder, and no token breaks every holder, answering
// the oldest; List then shows the key free, and every broken lease's
// renewal answers ErrNotHeld. For the engines whose Break goes through
// lock.BreakHolders (docs/ARCHITECTURE.md, "The engine contract").
func BreakSemaphore(t *testing.T, b lock.Backend) {
	t.Helper()
	ctx := ctxT(t)
	var ls []lock.Lease
	for _, owner := range []string{"a", "b", "c"} {
		req := lock.Request{Key: "sem", Owner: owner, TTL: time.Minute, Limit: 3, Meta: lock.Meta{Host: "h", PID: 1}}
		l, err := lock.TryOnce(ctx, b, req)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	if h, err := b.Break(ctx, "sem", ls[1].Token()); err != nil || h.Owner != "b" {
		t.Fatalf("break by b's token: %+v, %v", h, err)
	}
	var busy *lock.BusyError
	if _, err := b.Break(ctx, "sem", ls[1].Token()); !errors.As(err, &busy) || busy.Holder.Owner != "a" {
		t.Fatalf("break by a token nobody holds now: %v, want busy naming the oldest, a", err)
	}
	if h, err := b.Break(ctx, "sem", 0); err != nil || h.Owner != "a" {
		t.Fatalf("break of every holder: %+v, %v, want a (the oldest)", h, err)
	}
	if hs, err := b.List(ctx, ""); err != nil || len(hs) != 0 {
		t.Fatalf("after breaking every holder, List gives %+v, %v", hs, err)
	}
	if _, err := b.Break(ctx, "sem", 0); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("break of a free key: %v, want ErrNotHeld", err)
	}
	for _, l := range ls {
		if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("%d's renewal after the break: %v, want ErrNotHeld", l.Token(), err)
		}
	}
}
