package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/testenv/wait"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/embedetcd"
)

func request(key, owner string, ttl time.Duration) lock.Request {
	return lock.Request{
		Key:   key,
		TTL:   ttl,
		Owner: owner,
		Meta:  lock.Meta{Host: "host-" + owner, PID: 4000 + len(owner), User: "u-" + owner, Command: "./job.sh", Note: "note " + owner},
	}
}

// queueLen counts the holders and waiters of key, straight from etcd.
func queueLen(t *testing.T, b *Backend, key string) int64 {
	t.Helper()
	var n int64
	for _, p := range []string{b.queuePrefix(key), b.linePrefix(key)} {
		resp, err := b.cli.Get(wait.Context(t, 5*time.Second), p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		n += resp.Count
	}
	return n
}

func TestAcquireBusyRelease(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)

		before := time.Now()
		la, err := lock.TryOnce(ctx, b, request("job:daily", "alice", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if la.Token() == 0 || la.Key() != "job:daily" || la.Owner() != "alice" {
			t.Errorf("lease: token %d key %q owner %q", la.Token(), la.Key(), la.Owner())
		}
		if g := la.Granted(); g.Before(before) || g.After(time.Now()) {
			t.Errorf("Granted %v not within the try-once", g)
		}

		h, ok, err := b.Inspect(ctx, "job:daily")
		if err != nil || !ok {
			t.Fatalf("Inspect: ok=%v err=%v", ok, err)
		}
		want := request("job:daily", "alice", 0).Meta
		if h.Key != "job:daily" || h.Owner != "alice" || h.Token != la.Token() || h.Meta != want {
			t.Errorf("Inspect = %+v", h)
		}
		if h.TTL != 3*time.Second {
			t.Errorf("holder TTL = %s, want 3s", h.TTL)
		}
		if h.ExpiresIn < time.Second || h.ExpiresIn > 3*time.Second {
			t.Errorf("holder ExpiresIn = %s, want within (1s, 3s]", h.ExpiresIn)
		}
		if d := time.Since(h.AcquiredAt); d < 0 || d > 5*time.Second {
			t.Errorf("holder AcquiredAt = %v (%s ago)", h.AcquiredAt, d)
		}

		_, err = lock.TryOnce(ctx, b, request("job:daily", "bob", 3*time.Second))
		var busy *lock.BusyError
		if !errors.As(err, &busy) || !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("second try-once = %v, want *lock.BusyError", err)
		}
		if busy.Holder.Token != la.Token() || busy.Holder.Meta.Host != "host-alice" || busy.Holder.ExpiresIn <= 0 {
			t.Errorf("busy holder = %+v", busy.Holder)
		}
		if !strings.Contains(err.Error(), "host-alice") {
			t.Errorf("busy error %q does not name the holder", err)
		}
		if n := queueLen(t, b, "job:daily"); n != 1 {
			t.Errorf("after a busy try the queue has %d keys, want 1", n)
		}

		if err := la.Renew(ctx); err != nil {
			t.Errorf("Renew: %v", err)
		}
		if err := la.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if _, ok, err := b.Inspect(ctx, "job:daily"); ok || err != nil {
			t.Errorf("after Release Inspect: ok=%v err=%v", ok, err)
		}
		if err := la.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("second Release = %v, want ErrNotHeld", err)
		}
		if err := la.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Renew after Release = %v, want ErrNotHeld", err)
		}

		lb, err := lock.TryOnce(ctx, b, request("job:daily", "bob", 3*time.Second))
		if err != nil {
			t.Fatalf("try-once after release: %v", err)
		}
		if lb.Token() <= la.Token() {
			t.Errorf("token %d not above the previous %d", lb.Token(), la.Token())
		}
		if err := lb.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTokensStrictlyRise(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)
		var last uint64
		for i := range 6 {
			var l lock.Lease
			var err error
			if i%2 == 0 {
				l, err = lock.TryOnce(ctx, b, request("k", "o", 2*time.Second))
			} else {
				l, err = waitFor(ctx, b, request("k", "o", 2*time.Second), nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Activity on another key must not matter.
			other, err := lock.TryOnce(ctx, b, request("k2", "o", 2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if l.Token() <= last {
				t.Fatalf("acquisition %d: token %d not above %d", i, l.Token(), last)
			}
			last = l.Token()
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := other.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestWaitersGetTheLockInArrivalOrder(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 30*time.Second)
		holder, err := lock.TryOnce(ctx, b, request("q", "holder", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}

		const n = 5
		type result struct {
			i     int
			lease lock.Lease
			err   error
		}
		results := make(chan result, n)
		var progressMu sync.Mutex
		seen := make([][]uint64, n) // holder tokens each waiter was told of
		for i := range n {
			go func() {
				l, err := waitFor(ctx, b, request("q", fmt.Sprintf("w%d", i), 3*time.Second), func(h lock.Holder) {
					progressMu.Lock()
					seen[i] = append(seen[i], h.Token)
					progressMu.Unlock()
				})
				results <- result{i, l, err}
			}()
			// Let waiter i join the queue before the next one starts.
			wait.Until(t, 5*time.Second, fmt.Sprintf("waiter %d to queue", i), func() bool {
				return queueLen(t, b, "q") == int64(i+2)
			})
		}

		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		last := holder.Token()
		for want := range n {
			r := <-results
			if r.err != nil {
				t.Fatalf("waiter %d: %v", r.i, r.err)
			}
			if r.i != want {
				t.Fatalf("waiter %d got the lock in turn %d", r.i, want)
			}
			if r.lease.Token() <= last {
				t.Errorf("waiter %d token %d not above %d", r.i, r.lease.Token(), last)
			}
			last = r.lease.Token()
			h, ok, err := b.Inspect(ctx, "q")
			if err != nil || !ok || h.Token != r.lease.Token() || h.Owner != fmt.Sprintf("w%d", r.i) {
				t.Errorf("waiter %d holds, but Inspect = %+v, %v, %v", r.i, h, ok, err)
			}
			if err := r.lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		progressMu.Lock()
		defer progressMu.Unlock()
		for i, toks := range seen {
			if len(toks) == 0 || toks[0] != holder.Token() {
				t.Errorf("waiter %d was told of holders %v; want the first to be %d", i, toks, holder.Token())
			}
		}
		// Progress reports states, not events: quick hand-overs may be
		// seen merged, and a holder is shown again when a waiter that took
		// over restamps its acquisition time; but it only moves forward.
		for i, toks := range seen {
			for j := 1; j < len(toks); j++ {
				if toks[j] < toks[j-1] {
					t.Errorf("waiter %d was told of holders %v: going back", i, toks)
				}
			}
		}
		if n := queueLen(t, b, "q"); n != 0 {
			t.Errorf("queue has %d keys left", n)
		}
	})
}

func TestWaiterTimeoutLeavesNothingBehind(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		raw := rawClient(t, s)
		ctx := wait.Context(t, 10*time.Second)
		holder, err := lock.TryOnce(ctx, b, request("t", "holder", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		leasesBefore := leaseSet(t, raw)

		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = waitFor(wctx, b, request("t", "waiter", 2*time.Second), nil)
		var busy *lock.BusyError
		if !errors.As(err, &busy) {
			t.Fatalf("Acquire past its deadline = %v, want *lock.BusyError", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Acquire returned %s after a 300ms deadline", took)
		}
		if busy.Holder.Token != holder.Token() || busy.Holder.Owner != "holder" {
			t.Errorf("busy holder = %+v", busy.Holder)
		}
		if n := queueLen(t, b, "t"); n != 1 {
			t.Errorf("after the timeout the queue has %d keys, want 1 (the holder)", n)
		}
		if extra := leaseDiff(leaseSet(t, raw), leasesBefore); len(extra) != 0 {
			t.Errorf("leases left behind by the waiter: %v", extra)
		}

		// Cancelled (not a deadline): ctx's error, nothing left either.
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := waitFor(cctx, b, request("t", "waiter", 2*time.Second), nil)
			done <- err
		}()
		wait.Until(t, 5*time.Second, "the waiter to queue", func() bool { return queueLen(t, b, "t") == 2 })
		ccancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Acquire = %v, want context.Canceled", err)
		}
		if n := queueLen(t, b, "t"); n != 1 {
			t.Errorf("after the cancel the queue has %d keys, want 1", n)
		}
		if extra := leaseDiff(leaseSet(t, raw), leasesBefore); len(extra) != 0 {
			t.Errorf("leases left behind by the cancelled waiter: %v", extra)
		}
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func leaseSet(t *testing.T, cli *clientv3.Client) map[clientv3.LeaseID]bool {
	t.Helper()
	resp, err := cli.Leases(wait.Context(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := map[clientv3.LeaseID]bool{}
	for _, l := range resp.Leases {
		m[l.ID] = true
	}
	return m
}

func leaseDiff(after, before map[clientv3.LeaseID]bool) []clientv3.LeaseID {
	var out []clientv3.LeaseID
	for id := range after {
		if !before[id] {
			out = append(out, id)
		}
	}
	return out
}

func TestBreak(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)

		if _, err := b.Break(ctx, "br", 0); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Break of a free key = %v, want ErrNotHeld", err)
		}
		l, err := lock.TryOnce(ctx, b, request("br", "alice", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}

		// Wrong token: left alone.
		h, err := b.Break(ctx, "br", l.Token()+1000)
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Token != l.Token() || h.Token != l.Token() {
			t.Fatalf("Break with a wrong token = %+v, %v; want *lock.BusyError naming token %d", h, err, l.Token())
		}
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("Renew after a refused Break: %v", err)
		}

		// Right token: broken; the holder learns it at its next renew.
		h, err = b.Break(ctx, "br", l.Token())
		if err != nil || h.Token != l.Token() || h.Owner != "alice" {
			t.Fatalf("Break = %+v, %v", h, err)
		}
		if _, ok, _ := b.Inspect(ctx, "br"); ok {
			t.Error("key still held after Break")
		}
		if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Renew after Break = %v, want ErrNotHeld", err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Release after Break = %v, want ErrNotHeld", err)
		}

		// Token 0 breaks whoever holds, and a waiter takes over.
		l2, err := lock.TryOnce(ctx, b, request("br", "bob", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan lock.Lease, 1)
		go func() {
			l, err := waitFor(ctx, b, request("br", "carol", 3*time.Second), nil)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		wait.Until(t, 5*time.Second, "carol to queue", func() bool { return queueLen(t, b, "br") == 2 })
		if h, err := b.Break(ctx, "br", 0); err != nil || h.Owner != "bob" {
			t.Fatalf("Break(0) = %+v, %v", h, err)
		}
		l3 := <-got
		if l3 == nil {
			t.FailNow()
		}
		if l3.Token() <= l2.Token() {
			t.Errorf("carol's token %d not above bob's %d", l3.Token(), l2.Token())
		}
		if err := l2.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("bob's Renew after Break = %v, want ErrNotHeld", err)
		}
		if err := l3.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRenewAfterExpiry(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 15*time.Second)
		l, err := lock.TryOnce(ctx, b, request("exp", "alice", time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wait.Until(t, 10*time.Second, "the 1s lease to expire", func() bool {
			_, ok, err := b.Inspect(ctx, "exp")
			return err == nil && !ok
		})
		if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Renew after expiry = %v, want ErrNotHeld", err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Release after expiry = %v, want ErrNotHeld", err)
		}
	})
}

// A holder that renews keeps the lock past its TTL; a waiter meanwhile keeps
// its own (shorter) lease alive, and gets the lock when the holder stops
// renewing and its lease expires.
func TestRenewAndWaiterKeepAlive(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		l, err := lock.TryOnce(ctx, b, request("ka", "alice", time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan lock.Lease, 1)
		waitStart := time.Now()
		go func() {
			l, err := waitFor(ctx, b, request("ka", "bob", time.Second), nil)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		wait.Until(t, 5*time.Second, "bob to queue", func() bool { return queueLen(t, b, "ka") == 2 })

		// Renew every TTL/3 for 2 TTLs: alice keeps the lock, bob stays queued.
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			if err := l.Renew(ctx); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			select {
			case <-got:
				t.Fatal("bob got the lock while alice renewed")
			case <-time.After(300 * time.Millisecond):
			}
		}
		if h, ok, err := b.Inspect(ctx, "ka"); err != nil || !ok || h.Owner != "alice" {
			t.Fatalf("after renewals Inspect = %+v, %v, %v", h, ok, err)
		}
		if n := queueLen(t, b, "ka"); n != 2 {
			t.Fatalf("queue has %d keys; bob's lease was not kept alive", n)
		}

		// Alice stops renewing (as if killed): bob gets it after her lease expires.
		stopped := time.Now()
		var lb lock.Lease
		select {
		case lb = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("bob did not get the lock after alice's lease expired")
		}
		if lb == nil {
			t.FailNow()
		}
		if lb.Granted().Before(stopped) || lb.Granted().Before(waitStart) {
			t.Errorf("bob's Granted %v is before alice stopped renewing (%v)", lb.Granted(), stopped)
		}
		if lb.Token() <= l.Token() {
			t.Errorf("bob's token %d not above alice's %d", lb.Token(), l.Token())
		}
		h, _, _ := b.Inspect(ctx, "ka")
		if h.Owner != "bob" || !h.AcquiredAt.After(waitStart.Add(time.Second)) {
			t.Errorf("holder after take-over = %+v; want bob, acquired after he queued", h)
		}
		if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("alice's Renew after expiry = %v, want ErrNotHeld", err)
		}
		if err := lb.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A waiter whose lease is revoked behind its back joins the queue again,
// and keeps its new place: a waiter that came after it there still comes
// after it (a lost place once made it leave and join again at every try,
// always at the back).
func TestWaiterRequeuesAfterLosingItsLease(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		raw := rawClient(t, s)
		ctx := wait.Context(t, 20*time.Second)
		l, err := lock.TryOnce(ctx, b, request("rq", "alice", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan lock.Lease, 2)
		waiter := func(owner string) {
			l, err := waitFor(ctx, b, request("rq", owner, time.Second), nil)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}
		go waiter("bob")
		wait.Until(t, 5*time.Second, "bob to queue", func() bool { return queueLen(t, b, "rq") == 2 })
		resp, err := raw.Get(ctx, b.linePrefix("rq"), clientv3.WithLastCreate()...)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatal(resp, err)
		}
		bobsRev := resp.Kvs[0].CreateRevision
		if _, err := raw.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, 5*time.Second, "bob to queue again", func() bool {
			resp, err := raw.Get(ctx, b.linePrefix("rq"), clientv3.WithLastCreate()...)
			return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].CreateRevision > bobsRev
		})
		go waiter("carol")
		wait.Until(t, 5*time.Second, "carol to queue behind bob", func() bool { return queueLen(t, b, "rq") == 3 })
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"bob", "carol"} {
			l := <-got
			if l == nil {
				t.FailNow()
			}
			if l.Owner() != want {
				t.Errorf("%s got the lock; want %s", l.Owner(), want)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestKeysWithSlashesAndList(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)
		keys := []string{"a", "a/b", "a/b/c", "a%2Fb", "b", "ä ö"}
		tokens := map[string]uint64{}
		for _, k := range keys {
			l, err := lock.TryOnce(ctx, b, request(k, "o-"+k, 3*time.Second))
			if err != nil {
				t.Fatalf("try-once(%q): %v", k, err)
			}
			defer l.Release(ctx)
			tokens[k] = l.Token()
		}
		// A second contender on "a" must not show up as a holder anywhere.
		if _, err := lock.TryOnce(ctx, b, request("a", "x", 3*time.Second)); !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("try-once(a) = %v, want busy", err)
		}
		hs, err := b.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hs {
			got = append(got, h.Key)
			if h.Token != tokens[h.Key] || h.Owner != "o-"+h.Key {
				t.Errorf("List holder %+v; want token %d owner o-%s", h, tokens[h.Key], h.Key)
			}
		}
		if want := "a a%2Fb a/b a/b/c b ä ö"; strings.Join(got, " ") != want {
			t.Errorf("List keys = %q, want %q", strings.Join(got, " "), want)
		}
		hs, err = b.List(ctx, "a/")
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != 2 || hs[0].Key != "a/b" || hs[1].Key != "a/b/c" {
			t.Errorf("List(a/) = %+v", hs)
		}
		for _, k := range keys {
			h, ok, err := b.Inspect(ctx, k)
			if err != nil || !ok || h.Token != tokens[k] {
				t.Errorf("Inspect(%q) = %+v, %v, %v", k, h, ok, err)
			}
		}
	})
}

func TestNewUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := l.Addr().String()
	l.Close() // nothing listens there now

	cfg, err := ParseURL("etcd://alice:hunter2xyz@" + ep)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialTimeout = 500 * time.Millisecond
	start := time.Now()
	b, err := New(context.Background(), cfg)
	took := time.Since(start)
	if err == nil {
		b.Close()
		t.Fatal("New succeeded against a closed port")
	}
	var ue *lock.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("New = %T %v, want *lock.UnavailableError", err, err)
	}
	t.Logf("New failed in %s: %v", took, err)
	if took > 2*time.Second {
		t.Errorf("New took %s with a 500ms dial timeout", took)
	}
	msg := err.Error()
	if !strings.Contains(msg, ep) || !strings.Contains(msg, "refused") {
		t.Errorf("message %q should name %s and say the connection was refused", msg, ep)
	}
	if strings.Contains(msg, "hunter2xyz") {
		t.Errorf("message %q holds the password", msg)
	}
}

func TestNewAuth(t *testing.T) {
	ep, stop, err := embedetcd.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := wait.Context(t, 20*time.Second)

	func() {
		raw, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		for _, step := range []func() error{
			func() error { _, err := raw.UserAdd(ctx, "root", "rootpw"); return err },
			func() error { _, err := raw.UserGrantRole(ctx, "root", "root"); return err },
			func() error { _, err := raw.UserAdd(ctx, "alice", "hunter2xyz"); return err },
			func() error { _, err := raw.RoleAdd(ctx, "locker"); return err },
			func() error {
				_, err := raw.RoleGrantPermission(ctx, "locker", "distlock/", clientv3.GetPrefixRangeEnd("distlock/"), clientv3.PermissionType(clientv3.PermReadWrite))
				return err
			},
			func() error { _, err := raw.UserGrantRole(ctx, "alice", "locker"); return err },
			func() error { _, err := raw.UserAdd(ctx, "mallory", "m4llorypw"); return err },
			func() error { _, err := raw.AuthEnable(ctx); return err },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
	}()

	open := func(rawURL, prefix string) (*Backend, error) {
		cfg, err := ParseURL(rawURL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Prefix = prefix
		cfg.DialTimeout = 2 * time.Second
		return New(ctx, cfg)
	}
	for _, tc := range []struct {
		url, prefix, want string
	}{
		{"etcd://alice:wrong-secret-pw@" + ep, "distlock", "refused user \"alice\""},
		{"etcd://nobody:wrong-secret-pw@" + ep, "distlock", "refused user \"nobody\""},
		{"etcd://" + ep, "distlock", "authentication enabled"},
		{"etcd://mallory:m4llorypw@" + ep, "distlock", "may not read distlock/"},
		{"etcd://alice:hunter2xyz@" + ep, "other", "may not read other/"},
	} {
		start := time.Now()
		b, err := open(tc.url, tc.prefix)
		t.Logf("New(%s) took %s: %v", tc.url, time.Since(start), err)
		if err == nil {
			b.Close()
			t.Errorf("New(%s) succeeded", tc.url)
			continue
		}
		if !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s) = %v; want ErrUnavailable mentioning %q", tc.url, err, tc.want)
		}
		for _, pw := range []string{"wrong-secret-pw", "m4llorypw", "hunter2xyz"} {
			if strings.Contains(err.Error(), pw) {
				t.Errorf("New(%s) error %q holds a password", tc.url, err)
			}
		}
	}
	cfg, _ := ParseURL("etcd://alice@" + ep)
	if _, err := New(ctx, cfg); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New with a user and no password = %v, want ErrInvalid", err)
	}

	b, err := open("etcd://alice:hunter2xyz@"+ep, "distlock")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l, err := lock.TryOnce(ctx, b, request("authed", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Requests against a server that does not answer (SIGSTOPped) end with
// their context: Renew reports a transient error, not ErrNotHeld, in time.
func TestRequestsBoundedByContext(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		if s.proc == nil {
			t.Skip("needs a server process to pause")
		}
		b := newBackend(t, s)
		ctx := wait.Context(t, 20*time.Second)
		l, err := lock.TryOnce(ctx, b, request("pause", "alice", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// Stop returns once every thread of etcd is really stopped.
		if err := s.proc.Stop(); err != nil {
			t.Fatal(err)
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				s.proc.Cont()
			}
		}
		defer resume()

		for name, call := range map[string]func(context.Context) error{
			"Renew": l.Renew,
			"Inspect": func(ctx context.Context) error {
				_, _, err := b.Inspect(ctx, "pause")
				return err
			},
			"TryAcquire": func(ctx context.Context) error {
				_, err := lock.TryOnce(ctx, b, request("pause2", "bob", 3*time.Second))
				return err
			},
			"Entries":       func(ctx context.Context) error { _, err := b.Entries(ctx, "pause"); return err },
			"PutEntry":      func(ctx context.Context) error { return b.PutEntry(ctx, "pause", "a", nil) },
			"DeleteEntries": func(ctx context.Context) error { return b.DeleteEntries(ctx, "pause", []string{"a"}) },
		} {
			rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			start := time.Now()
			err := call(rctx)
			took := time.Since(start)
			cancel()
			if err == nil || errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s against a paused server = %v; want a deadline error", name, err)
			}
			// TryAcquire may add its bounded clean-up of a half-made entry.
			if limit := 200*time.Millisecond + cleanupTimeout + 500*time.Millisecond; took > limit {
				t.Errorf("%s took %s with a 200ms context", name, took)
			}
			t.Logf("%s: %s: %v", name, took.Round(time.Millisecond), err)
		}
		resume()
		if err := l.Renew(ctx); err != nil {
			t.Errorf("Renew after resume: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Error(err)
		}
	})
}

func TestGuaranteeAndBadRequests(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		if g := b.Guarantee(); !strings.HasPrefix(g, "etcd: linearizable") {
			t.Errorf("Guarantee = %q", g)
		}
		ctx := wait.Context(t, 5*time.Second)
		if _, err := lock.TryOnce(ctx, b, request("", "o", time.Second)); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("empty key: %v", err)
		}
		if _, err := waitFor(ctx, b, request("k", "o", 0), nil); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("zero TTL: %v", err)
		}
		// A sub-second TTL is granted as a whole second (rounded up).
		l, err := lock.TryOnce(ctx, b, request("k", "o", 1500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ttl, err := b.cli.TimeToLive(ctx, clientv3.LeaseID(storeOf(l).LeaseID()))
		if err != nil {
			t.Fatal(err)
		}
		if ttl.GrantedTTL != 2 {
			t.Errorf("1.5s TTL granted as %ds, want 2s", ttl.GrantedTTL)
		}
		l.Release(ctx)
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// TestBrokenHolderLeavesTheNextAlone: once broken, a holder's Renew, Hold
// and Release answer ErrNotHeld and leave alone the next holder, whose
// slot key has the same name (a later create revision): every one of them
// compares the key's create revision with its own (entry.ours,
// entry.readOurs). And with the same create revision too, as a restore of
// a snapshot without --bump-revision can give it again (etcd-io/etcd#16028):
// then they tell the keys apart by their lease.
func TestBrokenHolderLeavesTheNextAlone(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		for _, sameRev := range []bool{false, true} {
			brokenHolderLeavesTheNextAlone(t, s, sameRev)
		}
	})
}

func brokenHolderLeavesTheNextAlone(t *testing.T, s server, sameRev bool) {
	ctx, b := wait.Context(t, 10*time.Second), newBackend(t, s)
	take := func(owner string) lock.Lease {
		l, err := lock.TryOnce(ctx, b, request("re", owner, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	alice := take("alice")
	if _, err := b.Break(ctx, "re", alice.Token()); err != nil {
		t.Fatal(err)
	}
	bob := take("bob")
	if storeOf(bob).e.etcdKey != storeOf(alice).e.etcdKey {
		t.Fatalf("bob holds %s, alice held %s: want the same slot key", storeOf(bob).e.etcdKey, storeOf(alice).e.etcdKey)
	}
	if sameRev {
		storeOf(alice).e.rev = storeOf(bob).e.rev
	}
	for _, c := range []struct {
		op string
		do func() error
	}{
		{"Renew", func() error { return alice.Renew(ctx) }},
		{"Hold", func() error { return alice.Hold(ctx, 5*time.Second, lock.HoldMinHold) }},
		{"Release", func() error { return alice.Release(ctx) }},
	} {
		op := c.op
		if err := c.do(); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("the broken holder's %s (same revision %v) = %v, want ErrNotHeld", op, sameRev, err)
		}
		h, ok, err := b.Inspect(ctx, "re")
		if !ok || err != nil || h.Owner != "bob" || h.Token != bob.Token() || h.Hold != "" {
			t.Fatalf("after the broken holder's %s (same revision %v): %+v, %v, %v; want bob holding as he took it", op, sameRev, h, ok, err)
		}
		if err := bob.Renew(ctx); err != nil {
			t.Fatalf("bob's Renew after the broken holder's %s (same revision %v): %v", op, sameRev, err)
		}
	}
}
