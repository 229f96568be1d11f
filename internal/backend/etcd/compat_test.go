package etcd

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// Older builds kept a mutex as a queue of contenders under the queue
// prefix, "<prefix>/<escaped KEY>/<lease ID in hex>", the lowest create
// revision holding. An older and a newer build on one mutex must exclude
// each other: here the older build's transactions are replayed as it sent
// them (its joinQueue and its waiter's takeover).
func TestMutexExcludesAnOlderBuildsQueue(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		raw := rawClient(t, s)
		ctx := wait.Context(t, 20*time.Second)
		qp := b.queuePrefix("m")
		// oldJoin is the older build's first Try: its key, holding only
		// when the queue was empty.
		oldJoin := func(owner string, token uint64) (string, clientv3.LeaseID, bool) {
			g, err := raw.Grant(ctx, 30) // not clockLease: TestDoctorOnServer looks for those
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecord(request("m", owner, 30*time.Second), time.Now())
			k := fmt.Sprintf("%s%x", qp, int64(g.ID))
			held := rec
			held.Token = token
			resp, err := raw.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(qp).WithPrefix(), "=", 0)).
				Then(clientv3.OpPut(k, encodeJSON(held), clientv3.WithLease(g.ID))).
				Else(clientv3.OpPut(k, encodeJSON(rec), clientv3.WithLease(g.ID))).
				Commit()
			if err != nil {
				t.Fatal(err)
			}
			return k, g.ID, resp.Succeeded
		}

		// An older build holds: we are busy, wait, and take it once it left.
		k, id, held := oldJoin("old", 7)
		if !held {
			t.Fatal("the older build's join found the queue taken")
		}
		_, err := lock.TryOnce(ctx, b, request("m", "new", 5*time.Second))
		var busy *lock.BusyError
		if !errors.As(err, &busy) || busy.Holder.Owner != "old" || busy.Holder.Token != 7 {
			t.Fatalf("TryOnce under an older build's holder = %v, want busy naming it", err)
		}
		if _, err := lock.TryOnce(ctx, b, semReq("m", "sem", 2, 5*time.Second)); !errors.Is(err, lock.ErrLimitMismatch) {
			t.Errorf("a semaphore's TryOnce under an older build's mutex = %v, want a limit mismatch", err)
		}
		got := make(chan lock.Lease, 1)
		go func() {
			l, err := waitFor(ctx, b, request("m", "new", 5*time.Second), nil)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		wait.Until(t, 5*time.Second, "the new build to wait in line", func() bool {
			n, err := b.QueueLen(ctx, "m")
			return err == nil && n == 1
		})
		select {
		case <-got:
			t.Fatal("took the mutex while an older build held it")
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := raw.Revoke(ctx, id); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			t.FailNow()
		}

		// We hold: the older build neither takes an empty queue nor takes
		// over as first in line, its key being younger than our slot.
		k, _, held = oldJoin("old2", 0)
		if held {
			t.Fatal("the older build took the mutex while the new build held it")
		}
		resp, err := raw.Get(ctx, k)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatal(resp, err)
		}
		tr, err := raw.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(qp), ">", resp.Kvs[0].CreateRevision-1).WithPrefix()).
			Commit()
		if err != nil || tr.Succeeded {
			t.Fatalf("the older build's takeover compare = %v, %v: want it to fail while we hold", tr, err)
		}
		// A waiter of ours behind it, first in our line, is woken by our
		// release but must not take: the older build's key is first now.
		var tries atomic.Int32
		go func() {
			l, err := acquire.Acquire(ctx, countingBackend{b, &tries}, request("m", "new2", 5*time.Second), acquire.Options{Wait: acquire.Forever})
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		wait.Until(t, 5*time.Second, "the waiter to read its place", func() bool { return tries.Load() == 2 })
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			t.Fatal("took the mutex the older build's contender was first for")
		case <-time.After(300 * time.Millisecond):
		}
		if h, ok, err := b.Inspect(ctx, "m"); err != nil || !ok || h.Owner != "old2" {
			t.Errorf("Inspect = %+v %v %v, want the older build's contender", h, ok, err)
		}
		if h, err := b.Break(ctx, "m", 0); err != nil || h.Owner != "old2" {
			t.Errorf("Break = %+v %v, want the older build's contender broken", h, err)
		}
		if l := <-got; l == nil || l.Owner() != "new2" {
			t.Fatalf("after the break: %v, want new2 to hold", l)
		}
	})
}
