package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/testenv/embedetcd"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
)

// The tap learns a lease's grant and keep-alives from real gRPC traffic,
// each dated between just before it was sent and its answer, and only
// those the server answered with the lease alive.
func TestEtcdLeasesTap(t *testing.T) {
	ep, stop, err := embedetcd.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	px, err := faultproxy.New(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	el := tapEtcdLeases(px)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + px.Addr()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// Traffic on other streams first, so that the lease calls' headers
	// lean on HPACK's dynamic table.
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}

	within := func(what string, id clientv3.LeaseID, before, after time.Time) {
		t.Helper()
		s, ok := el.lastSent(int64(id))
		switch {
		case !ok:
			t.Fatalf("%s: the tap saw no answered grant or keep-alive of lease %x", what, id)
		case s.sent.Before(before) || s.sent.After(after):
			t.Fatalf("%s: forwarded at %s, not between %s and %s", what, s.sent.Format(time.StampMicro), before.Format(time.StampMicro), after.Format(time.StampMicro))
		case s.ttl != 3*time.Second:
			t.Fatalf("%s: TTL %s, want 3s", what, s.ttl)
		}
	}
	before := time.Now()
	g, err := c.Grant(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	within("grant", g.ID, before, time.Now())
	for i := range 3 {
		before = time.Now()
		if _, err := c.KeepAliveOnce(ctx, g.ID); err != nil {
			t.Fatal(err)
		}
		within(fmt.Sprint("keep-alive ", i+1), g.ID, before, time.Now())
	}

	// A keep-alive whose answer is held does not count: the tap cannot
	// know the server took it.
	answered := time.Now()
	px.PauseReplies()
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.KeepAliveOnce(sctx, g.ID)
	cancel()
	if err == nil {
		t.Fatal("a keep-alive got its answer through a pause of the replies")
	}
	within("after an unanswered keep-alive", g.ID, time.Time{}, answered)
	px.Resume()

	// Nor does one answered with the lease gone.
	if _, err := c.Revoke(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	if _, err := c.KeepAliveOnce(ctx, g.ID); err == nil {
		t.Fatal("a keep-alive of a revoked lease succeeded")
	}
	if s, _ := el.lastSent(int64(g.ID)); !s.sent.Before(before) {
		t.Fatalf("a keep-alive answered with the lease gone counted (forwarded at %s)", s.sent.Format(time.StampMicro))
	}
}
