package memstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// The one lease type (lock.Held) over the store's slots: what every
// engine's lease answers the same way.

func TestLeaseAnswersFromItsGrant(t *testing.T) {
	ctx := context.Background()
	s := New()
	before := time.Now()
	l, err := lock.TryOnce(ctx, s, lock.Request{Key: "k", Owner: "me", TTL: 30 * time.Second, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	h, ok, err := s.Inspect(ctx, "k")
	if err != nil || !ok {
		t.Fatalf("Inspect: %v %v", ok, err)
	}
	if l.Key() != "k" || l.Owner() != "me" || l.Token() != h.Token || l.Token() == 0 {
		t.Errorf("lease says %q %q %d; the store holds %q %q %d", l.Key(), l.Owner(), l.Token(), h.Key, h.Owner, h.Token)
	}
	if g := l.Granted(); g.Before(before) || g.After(time.Now()) {
		t.Errorf("Granted %v is not the time of the grant", g)
	}
	if sl, ok := l.(lock.Slotted); !ok || sl.Slot() != 0 {
		t.Errorf("a semaphore's first lease: Slotted %v", ok)
	}
	if fl, ok := l.(lock.FileLocked); ok && fl.LockFiles() != nil {
		t.Error("a lease whose store holds no files is lock.FileLocked: the runner would count it as held while its process lives")
	}
	if l.Alerts() != nil {
		t.Error("a store with no news gives an Alerts channel")
	}
	want := lock.Handle{Key: "k", Owner: "me", Token: h.Token, TTLms: 30000}
	if got := l.Handle(); got != want {
		t.Errorf("Handle = %+v, want %+v", got, want)
	}
}

// A handle resumes the lease it names: the same key, owner, token and
// slot, renewable, holdable and releasable from the resumed lease.
func TestLeaseResumesFromItsHandle(t *testing.T) {
	ctx := context.Background()
	s := New()
	if _, err := lock.TryOnce(ctx, s, lock.Request{Key: "k", Owner: "other", TTL: time.Minute, Limit: 2}); err != nil {
		t.Fatal(err)
	}
	l, err := lock.TryOnce(ctx, s, lock.Request{Key: "k", Owner: "me", TTL: time.Minute, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	enc := l.Handle().Encode()
	h, err := lock.ParseHandle(enc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resume(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if r.Key() != l.Key() || r.Owner() != l.Owner() || r.Token() != l.Token() || r.(lock.Slotted).Slot() != 1 {
		t.Errorf("resumed %q %q %d slot %d; granted %q %q %d slot 1", r.Key(), r.Owner(), r.Token(), r.(lock.Slotted).Slot(), l.Key(), l.Owner(), l.Token())
	}
	if r.Handle().Encode() != enc {
		t.Errorf("the resumed lease's handle %q is not the one it was resumed from %q", r.Handle().Encode(), enc)
	}
	if err := r.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Hold(ctx, time.Hour, lock.HoldHandle); err != nil {
		t.Fatal(err)
	}
	if got := r.Handle().TTL(); got != time.Minute {
		t.Errorf("after a hold the handle names %v; this store's handle keeps the TTL asked for (1m)", got)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Inspect(ctx, "k"); !ok {
		t.Error("releasing slot 1 freed the whole key")
	}
}

// Once broken, the lease is not ours: every owner-checked call says so,
// naming the key, and the TTL its handle names stays as it was.
func TestLeaseBrokenIsNotOurs(t *testing.T) {
	ctx := context.Background()
	s := New()
	l, err := lock.TryOnce(ctx, s, lock.Request{Key: "deploy", Owner: "me", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break(ctx, "deploy", l.Token()); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Renew":   func() error { return l.Renew(ctx) },
		"Hold":    func() error { return l.Hold(ctx, time.Hour, lock.HoldMinHold) },
		"Release": func() error { return l.Release(ctx) },
	} {
		err := call()
		if !errors.Is(err, lock.ErrNotHeld) || !strings.HasPrefix(err.Error(), "deploy: ") {
			t.Errorf("%s of a broken lease: %v, want ErrNotHeld naming the key", name, err)
		}
	}
	if got := l.Handle().TTL(); got != time.Minute {
		t.Errorf("a failed hold changed the handle's TTL to %v", got)
	}
}
