package etcd

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestNestedPrefixIsNoHolder: --prefix may hold '/', so every key of
// "--prefix P/ci" lies under the queue prefix of key "ci" of "--prefix P".
// None of them is a holder of "ci" there: not its slots, token counters,
// waiters, run ledger, nor an older build's contender of one of its keys.
func TestNestedPrefixIsNoHolder(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		p := testPrefix(t)
		outer, inner := newBackendPrefix(t, s, p), newBackendPrefix(t, s, p+"/ci")
		raw := rawClient(t, s)
		ctx := wait.Context(t, 20*time.Second)
		var held []lock.Lease
		for _, req := range []lock.Request{request("deploy", "inner", 10*time.Second), semReq("pool", "inner", 2, 10*time.Second)} {
			l, err := lock.TryOnce(ctx, inner, req)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, l)
		}
		if err := inner.PutEntry(ctx, "deploy", "run1", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		g, err := raw.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		old := fmt.Sprintf("%s%x", inner.queuePrefix("beef"), int64(g.ID))
		if _, err := raw.Put(ctx, old, `{"owner":"old"}`, clientv3.WithLease(g.ID)); err != nil {
			t.Fatal(err)
		}
		wctx, stopWaiter := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() {
			_, err := waitFor(wctx, inner, request("deploy", "inner-waiter", 10*time.Second), nil)
			waited <- err
		}()
		wait.Until(t, 5*time.Second, "the inner waiter to stand in line", func() bool {
			n, err := inner.QueueLen(ctx, "deploy")
			return err == nil && n == 1
		})
		before, err := raw.Get(ctx, p+"/ci/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}

		if h, ok, err := outer.Inspect(ctx, "ci"); ok || err != nil {
			t.Errorf("Inspect(ci) = %+v %v %v, want free", h, ok, err)
		}
		if h, err := outer.Break(ctx, "ci", 0); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Break(ci) = %+v %v, want not held", h, err)
		}
		for _, kp := range []string{"", "c", "ci"} {
			if hs, err := outer.List(ctx, kp); len(hs) != 0 || err != nil {
				t.Errorf("List(%q) = %+v %v, want nothing", kp, hs, err)
			}
		}
		for _, req := range []lock.Request{request("ci", "outer", 5*time.Second), semReq("ci", "outer", 3, 5*time.Second)} {
			l, err := lock.TryOnce(ctx, outer, req)
			if err != nil {
				t.Fatalf("TryOnce(ci, limit %d) = %v, want it free", req.Limit, err)
			}
			hs, err := outer.List(ctx, "")
			if err != nil || len(hs) != 1 || hs[0].Key != "ci" || hs[0].Owner != "outer" {
				t.Errorf("List while ci is held = %+v %v, want ci by outer alone", hs, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// A waiter in line takes ci when its holder leaves.
		lo, err := lock.TryOnce(ctx, outer, request("ci", "outer", 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan lock.Lease, 1)
		go func() {
			l, err := waitFor(ctx, outer, request("ci", "outer-waiter", 5*time.Second), nil)
			if err != nil {
				t.Errorf("waiting for ci: %v", err)
			}
			got <- l
		}()
		wait.Until(t, 5*time.Second, "the outer waiter to stand in line", func() bool {
			n, err := outer.QueueLen(ctx, "ci")
			return err == nil && n == 1
		})
		if err := lo.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if l := <-got; l == nil || l.Release(ctx) != nil {
			t.Fatalf("the outer waiter's lease %v, want it taken and released", l)
		}

		after, err := raw.Get(ctx, p+"/ci/", clientv3.WithPrefix())
		if err != nil || after.Count != before.Count {
			t.Errorf("the inner prefix has %d keys after, %d before (%v)", after.Count, before.Count, err)
		}
		for _, l := range held {
			if err := l.Renew(ctx); err != nil {
				t.Errorf("inner %s: %v", l.Key(), err)
			}
		}
		stopWaiter()
		<-waited
		for _, l := range held {
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		}
	})
}
