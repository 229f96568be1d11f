package consul

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// proxy puts a fault proxy in front of addr.
func proxy(t *testing.T, addr string) *faultproxy.Proxy {
	t.Helper()
	px, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return px
}

// rawClient talks to the agent at addr directly, past any proxy.
func rawClient(t *testing.T, addr string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = addr
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// entrySession is the session that holds key on the agent ("": the key is
// gone), read consistently.
func entrySession(t *testing.T, raw *api.Client, key string) string {
	t.Helper()
	kv, _, err := raw.KV().Get(key, (&api.QueryOptions{RequireConsistent: true}).WithContext(wait.Context(t, 5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if kv == nil {
		return ""
	}
	return kv.Session
}

// storeOf is the Consul store of a lease of this engine.
func storeOf(l lock.Lease) *session { return lock.StoreOf(l).(*session) }

// tapOnce makes px call act (once) on the first chunk going the way
// toServer says that holds mark, just before it is forwarded.
func tapOnce(px *faultproxy.Proxy, toServer bool, mark string, act func()) {
	var done atomic.Bool
	px.SetTap(func(_ uint64, up bool, data []byte, _ time.Time) {
		if up == toServer && bytes.Contains(data, []byte(mark)) && done.CompareAndSwap(false, true) {
			act()
		}
	})
}

// A hold's move whose reply is lost and that reaches the agent only after
// Hold read the entry back (still on the old session) must not be undone:
// before the fix Hold destroyed the new session on that read, and when the
// move had been applied meanwhile the destroy deleted the lock (the
// sessions' behavior is delete) while Hold reported an error, which
// promises the old expiry. The client reaches the agent through two
// proxies: the move goes through A, held there (Hold's context ends, and
// the client turns to B); the read-back goes through B, whose answer is
// held until A has let the move through and the agent applied it.
func TestHoldMoveArrivingAfterReadBackKeepsTheLock(t *testing.T) {
	ag := agent(t)
	pa, pb := proxy(t, ag.Addr()), proxy(t, ag.Addr())
	raw := rawClient(t, ag.Addr())
	b := open(t, pa.Addr()+","+pb.Addr())
	l, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	old, kvKey := storeOf(l).sid, storeOf(l).kvKey
	// The new session's creation is answered through A; A then holds all
	// that follows: the move.
	tapOnce(pa, false, `"ID":`, pa.Pause)
	// The read-back reaches the agent through B; its answer is held.
	tapOnce(pb, true, "GET /v1/kv/", pb.PauseReplies)
	held := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		held <- l.Hold(ctx, 30*time.Second, lock.HoldHandle)
	}()
	wait.Until(t, 10*time.Second, "the read-back's answer to be held", func() bool { _, r := pb.Held(); return r > 0 })
	if got := entrySession(t, raw, kvKey); got != old {
		t.Fatalf("before the move was let through, the entry is on session %q, want the old %q", got, old)
	}
	pa.Resume()
	wait.Until(t, 5*time.Second, "the held move to be applied", func() bool {
		got := entrySession(t, raw, kvKey)
		return got != "" && got != old
	})
	moved := entrySession(t, raw, kvKey)
	pb.Resume() // the read-back's answer: "still on the old session"
	err = <-held
	if err == nil || errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Hold whose read-back saw the old session = %v, want an engine error", err)
	}
	t.Logf("Hold: %v", err)
	// Hold has returned: any destroy it sent was answered.
	if got := entrySession(t, raw, kvKey); got != moved {
		t.Fatalf("the lock entry is on session %q, want %q, where the late move put it: the session was destroyed and the lock deleted while Hold reported an error", got, moved)
	}
	if se, _, err := raw.Session().Info(moved, nil); err != nil || se == nil {
		t.Fatalf("the session the entry moved to is gone (%v)", err)
	}
}

// When the move's reply is lost and the entry cannot be read back either,
// Hold fails as an engine error (exit 69 for extend) and destroys no
// session: the entry, moved meanwhile, is still held on the new one.
func TestHoldUnreadableAfterLostReplyDestroysNothing(t *testing.T) {
	ag := agent(t)
	px := proxy(t, ag.Addr())
	raw := rawClient(t, ag.Addr())
	cfg, err := ParseURL("consul://" + px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix, cfg.ConnectTimeout = "unreadable"+time.Now().Format("150405.000000000"), time.Second
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	l, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	old, kvKey := storeOf(l).sid, storeOf(l).kvKey
	tapOnce(px, false, `"ID":`, px.PauseReplies) // and keep them held
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = l.Hold(ctx, 30*time.Second, lock.HoldHandle)
	if err == nil || errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Hold with no answer at all = %v, want an engine error", err)
	}
	t.Logf("Hold: %v", err)
	moved := entrySession(t, raw, kvKey)
	if moved == "" || moved == old {
		t.Fatalf("the entry is on session %q (old %q): the test did not lose an applied move's reply", moved, old)
	}
	// Requests went through all along (only replies were held): any
	// destroy Hold sent has been applied by now.
	px.Resume()
	if got := entrySession(t, raw, kvKey); got != moved {
		t.Fatalf("the lock entry is on session %q, want %q: its session was destroyed", got, moved)
	}
}

// A hold of a lock broken meanwhile, whose move's reply is lost, is "not
// held" (extend exits 76), not an engine failure (69): the read-back
// (through the second server of the URL) finds the entry gone.
func TestHoldOnBrokenLockAfterLostReplyIsNotHeld(t *testing.T) {
	ag := agent(t)
	pa, pb := proxy(t, ag.Addr()), proxy(t, ag.Addr())
	b := open(t, pa.Addr()+","+pb.Addr())
	l, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Break(wait.Context(t, 10*time.Second), "h", l.Token()); err != nil {
		t.Fatal(err)
	}
	tapOnce(pa, false, `"ID":`, pa.PauseReplies)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.Hold(ctx, 30*time.Second, lock.HoldHandle); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Hold of a broken lock after a lost reply = %v, want lock.ErrNotHeld", err)
	}
}
