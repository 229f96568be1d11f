package etcd

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestBreakComparesTheLease: break deletes a holder's key only on the
// lease it read it on. A key that moved to another lease since (keeping
// its create revision: a hold, hold.go, or another holder's key with the
// same revision after a restore without --bump-revision) is left alone,
// and break says to try again.
func TestBreakComparesTheLease(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b, _, fault := proxiedBackend(t, s)
		raw := rawClient(t, s)
		ctx := wait.Context(t, 10*time.Second)
		l, err := lock.TryOnce(ctx, b, request("mv", "alice", 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		g, err := raw.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		key := storeOf(l).e.etcdKey
		fault.arm(func(invoke func() error) error {
			got, err := raw.Get(ctx, key)
			if err != nil || len(got.Kvs) != 1 {
				t.Fatalf("reading %s: %v %v", key, got, err)
			}
			if _, err := raw.Put(ctx, key, string(got.Kvs[0].Value), clientv3.WithLease(g.ID)); err != nil {
				t.Fatal(err)
			}
			return invoke()
		})
		if h, err := b.Break(ctx, "mv", 0); !lock.Transient(err) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Break of a key moved to another lease meanwhile = %+v, %v; want a transient error", h, err)
		}
		if found, rev, lease := onServer(t, raw, l); !found || rev != storeOf(l).e.rev || lease != g.ID {
			t.Errorf("the moved key: found %v, revision %d, lease %x; want it left alone on %x", found, rev, lease, g.ID)
		}
		if h, err := b.Break(ctx, "mv", 0); err != nil || h.Owner != "alice" {
			t.Errorf("Break again = %+v, %v; want alice broken", h, err)
		}
	})
}
