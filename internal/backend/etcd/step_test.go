package etcd

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// keepAliveFault fails the next keep-alive a Backend sends, once armed,
// and notes when.
type keepAliveFault struct {
	armed   atomic.Bool
	mu      sync.Mutex
	firedAt time.Time
}

func (f *keepAliveFault) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if method == "/etcdserverpb.Lease/LeaseKeepAlive" && f.armed.CompareAndSwap(true, false) {
		f.mu.Lock()
		f.firedAt = time.Now()
		f.mu.Unlock()
		return nil, status.Error(codes.Aborted, "injected: the keep-alive was lost")
	}
	return streamer(ctx, desc, cc, method, opts...)
}

func (f *keepAliveFault) fired() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firedAt
}

// A waiter's takeover that etcd applied while the keep-alive sent with it
// failed is the waiter's, but how long its lease lasts is not known: the
// lease is handed out only once a renewal says it is alive (its validity
// counting from then; lock.TakeRenewed renews again within the same Try),
// and the waiter keeps what it took (same etcd lease, no new place in
// line), for a mutex and a semaphore's slot alike.
func TestTakeoverWhoseKeepAliveFailedIsConfirmed(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		for _, limit := range []int{1, 2} {
			t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
				b := newBackend(t, s)
				fault := &keepAliveFault{}
				fb := newBackendPrefix(t, s, b.prefix, grpc.WithChainStreamInterceptor(fault.intercept))
				raw := rawClient(t, s)
				ctx := wait.Context(t, 20*time.Second)
				var held []lock.Lease
				for i := range limit {
					l, err := lock.TryOnce(ctx, b, semReq("k", fmt.Sprint("h", i), limit, 3*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					held = append(held, l)
				}
				var retries atomic.Int32
				got := make(chan lock.Lease, 1)
				go func() {
					// A long TTL: the waiter's own keep-alive does not tick
					// during the test, the takeover's is the one that fails.
					l, err := acquire.Acquire(ctx, fb, semReq("k", "w", limit, 30*time.Second), acquire.Options{
						Wait:     acquire.Forever,
						Retrying: func(error, int, time.Duration) { retries.Add(1) },
					})
					if err != nil {
						t.Error(err)
					}
					got <- l
				}()
				line := b.linePrefix("k")
				var waiting clientv3.LeaseID
				wait.Until(t, 5*time.Second, "the waiter to stand in line", func() bool {
					resp, err := raw.Get(ctx, line, clientv3.WithLastCreate()...)
					if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].Lease == int64(clientv3.LeaseID(storeOf(held[0]).LeaseID())) {
						return false
					}
					waiting = clientv3.LeaseID(resp.Kvs[0].Lease)
					return true
				})
				fault.armed.Store(true)
				if err := held[0].Release(ctx); err != nil {
					t.Fatal(err)
				}
				l := <-got
				if l == nil {
					t.FailNow()
				}
				if fault.armed.Load() || retries.Load() != 0 {
					t.Fatalf("fault armed %v, %d retries: want the takeover's keep-alive to fail and the take to confirm it (lock.TakeRenewed)", fault.armed.Load(), retries.Load())
				}
				if !l.Granted().After(fault.fired()) {
					t.Errorf("granted at %v, before the keep-alive failed at %v: validity counted from an unconfirmed lease", l.Granted(), fault.fired())
				}
				if id := clientv3.LeaseID(storeOf(l).LeaseID()); id != waiting {
					t.Errorf("the lock is on etcd lease %x, the waiter stood in line on %x: it lost what it took", id, waiting)
				}
				if h, ok, err := b.Inspect(ctx, "k"); limit == 1 && (err != nil || !ok || h.Token != l.Token()) {
					t.Errorf("Inspect = %+v %v %v, want the waiter with token %d", h, ok, err, l.Token())
				}
				for _, l := range append(held[1:], l) {
					if err := l.Renew(ctx); err != nil {
						t.Error(err)
					}
					if err := l.Release(ctx); err != nil {
						t.Error(err)
					}
				}
			})
		}
	})
}
