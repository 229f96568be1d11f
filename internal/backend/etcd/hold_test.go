package etcd

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// txnFault runs a fault around the next transaction a Backend sends: the
// fault gets the call (invoke sends the real request to the real server
// through the proxy) and returns what the client is to see.
type txnFault struct {
	mu   sync.Mutex
	next func(invoke func() error) error
}

func (f *txnFault) arm(fault func(invoke func() error) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next = fault
}

func (f *txnFault) take() func(invoke func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault := f.next
	f.next = nil
	return fault
}

func (f *txnFault) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	invoke := func() error { return invoker(ctx, method, req, reply, cc, opts...) }
	if method == "/etcdserverpb.KV/Txn" {
		if fault := f.take(); fault != nil {
			return fault(invoke)
		}
	}
	return invoke()
}

// proxiedBackend opens a Backend on s through a fault proxy, with a
// txnFault on its transactions.
func proxiedBackend(t *testing.T, s server) (*Backend, *faultproxy.Proxy, *txnFault) {
	t.Helper()
	px, err := faultproxy.New(s.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	cfg, err := ParseURL("etcd://" + px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	f := &txnFault{}
	cfg.Prefix = testPrefix(t)
	cfg.DialTimeout = 5 * time.Second
	cfg.dialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(f.intercept)}
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, px, f
}

// onServer reads our lock key straight from the server (not through the
// proxy): whether it exists, with which create revision and on which lease.
func onServer(t *testing.T, raw *clientv3.Client, l lock.Lease) (found bool, rev int64, lease clientv3.LeaseID) {
	t.Helper()
	resp, err := raw.Get(wait.Context(t, 5*time.Second), storeOf(l).e.etcdKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return false, 0, 0
	}
	return true, resp.Kvs[0].CreateRevision, clientv3.LeaseID(resp.Kvs[0].Lease)
}

// leaseAlive asks the server whether lease id still exists.
func leaseAlive(t *testing.T, raw *clientv3.Client, id clientv3.LeaseID) bool {
	t.Helper()
	resp, err := raw.TimeToLive(wait.Context(t, 5*time.Second), id)
	if err != nil {
		t.Fatal(err)
	}
	return resp.TTL > 0
}

// A Hold whose transaction was applied but whose reply was lost must leave
// the lock held (on the new lease) and report success: before the fix it
// revoked the new lease, deleting the key it had just moved there, and
// reported a failure. Two ways to lose the reply: it is held until the
// client gives up (deadline), or the connection is reset after the server
// applied the request.
func TestHoldAfterLostReplyKeepsTheLock(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		for _, tc := range []struct {
			name string
			lose func(t *testing.T, px *faultproxy.Proxy, applied func() bool) func(invoke func() error) error
		}{
			{"reply held past the deadline", func(t *testing.T, px *faultproxy.Proxy, applied func() bool) func(func() error) error {
				return func(invoke func() error) error {
					px.PauseReplies()
					err := invoke() // returns when Hold's context ends
					if !applied() {
						t.Error("the transaction was not applied while its reply was held")
					}
					px.Resume()
					return err
				}
			}},
			{"connection reset after the apply", func(t *testing.T, px *faultproxy.Proxy, applied func() bool) func(func() error) error {
				return func(invoke func() error) error {
					px.PauseReplies()
					done := make(chan error, 1)
					go func() { done <- invoke() }()
					wait.Until(t, 5*time.Second, "the transaction to be applied", applied)
					px.Drop()
					err := <-done
					px.Heal()
					px.Resume()
					return err
				}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b, px, fault := proxiedBackend(t, s)
				raw := rawClient(t, s)
				ll, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 3*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				l := ll
				old := storeOf(l).e.id
				applied := func() bool {
					found, rev, lease := onServer(t, raw, l)
					return found && rev == storeOf(l).e.rev && lease != old
				}
				fault.arm(tc.lose(t, px, applied))
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if err := l.Hold(ctx, 30*time.Second, lock.HoldHandle); err != nil {
					t.Fatalf("Hold after a lost reply = %v, want success: the key was moved", err)
				}
				found, rev, lease := onServer(t, raw, l)
				if !found || rev != storeOf(l).e.rev {
					t.Fatalf("after Hold the lock key is gone (found=%v rev=%d, want %d)", found, rev, storeOf(l).e.rev)
				}
				if lease == old || lease != storeOf(l).e.id || clientv3.LeaseID(l.Handle().LeaseID) != lease {
					t.Errorf("key on lease %x; old %x, the lease now believes %x", lease, old, storeOf(l).e.id)
				}
				if !leaseAlive(t, raw, lease) {
					t.Error("the hold lease was revoked")
				}
				// Hold revokes the old lease before it returns; left alone it
				// would live for its 3s TTL.
				if leaseAlive(t, raw, old) {
					t.Error("the old lease was not revoked")
				}
			})
		}
	})
}

// A Hold on a lock that was broken meanwhile, whose reply is lost, is "not
// held" (extend exits 76), not an engine failure (69).
func TestHoldOnBrokenLockAfterLostReplyIsNotHeld(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b, px, fault := proxiedBackend(t, s)
		ll, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l := ll
		if _, err := b.Break(wait.Context(t, 10*time.Second), "h", l.Token()); err != nil {
			t.Fatal(err)
		}
		fault.arm(func(invoke func() error) error {
			px.PauseReplies()
			err := invoke()
			px.Resume()
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := l.Hold(ctx, 30*time.Second, lock.HoldHandle); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Hold of a broken lock after a lost reply = %v, want lock.ErrNotHeld", err)
		}
	})
}

// When the reply is lost and the key cannot be read back either, Hold
// fails, but revokes nothing: the key may be on the new lease, and it must
// still be held there once the engine answers again.
func TestHoldUnreadableAfterLostReplyRevokesNothing(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b, px, fault := proxiedBackend(t, s)
		raw := rawClient(t, s)
		ll, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l := ll
		old := storeOf(l).e.id
		fault.arm(func(invoke func() error) error {
			px.PauseReplies() // and keep them held: the read-back fails too
			return invoke()
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = l.Hold(ctx, 30*time.Second, lock.HoldHandle)
		if err == nil || errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Hold with no answer at all = %v, want an engine error", err)
		}
		t.Logf("Hold: %v", err)
		found, rev, lease := onServer(t, raw, l)
		switch {
		case !found || rev != storeOf(l).e.rev:
			t.Fatalf("the lock key is gone (found=%v rev=%d): its new lease was revoked", found, rev)
		case lease == old:
			t.Fatal("the transaction was not applied: the test did not lose a reply")
		}
		// Requests went through all along (only replies were held): any
		// revoke Hold sent has been applied by now. Let the replies go and
		// check that the lock still lives on its new lease.
		px.Resume()
		if !leaseAlive(t, raw, lease) {
			t.Fatal("the lease the key was moved to was revoked: the lock is gone")
		}
		if found, rev, _ := onServer(t, raw, l); !found || rev != storeOf(l).e.rev {
			t.Fatal("the lock key is gone")
		}
	})
}

// A transaction lost on its way (the connection reset before the server
// read it) was not applied: Hold fails as an engine error, and the lock
// stays ours on its old lease.
func TestHoldAfterLostRequestKeepsTheOldLease(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b, px, fault := proxiedBackend(t, s)
		raw := rawClient(t, s)
		ll, err := lock.TryOnce(wait.Context(t, 10*time.Second), b, request("h", "me", 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l := ll
		old := storeOf(l).e.id
		fault.arm(func(invoke func() error) error {
			px.Pause()
			done := make(chan error, 1)
			go func() { done <- invoke() }()
			wait.Until(t, 5*time.Second, "the transaction to be sent", func() bool { n, _ := px.Held(); return n > 0 })
			px.Drop() // the held request is thrown away with the connection
			err := <-done
			px.Heal()
			px.Resume()
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = l.Hold(ctx, 30*time.Second, lock.HoldHandle)
		if err == nil || errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Hold whose request was lost = %v, want an engine error", err)
		}
		t.Logf("Hold: %v", err)
		found, rev, lease := onServer(t, raw, l)
		if !found || rev != storeOf(l).e.rev || lease != old || storeOf(l).e.id != old {
			t.Fatalf("after a lost request: found=%v rev=%d lease=%x; want the key on the old lease %x (lease believes %x)", found, rev, lease, old, storeOf(l).e.id)
		}
		if err := l.Renew(wait.Context(t, 5*time.Second)); err != nil {
			t.Errorf("the lease is no longer renewable: %v", err)
		}
	})
}

// storeOf is the etcd store of a lease of this engine.
func storeOf(l lock.Lease) *keyStore { return lock.StoreOf(l).(*keyStore) }
