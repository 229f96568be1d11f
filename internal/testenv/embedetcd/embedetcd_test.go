package embedetcd

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestStartPutGetStop(t *testing.T) {
	t0 := time.Now()
	ep, stop, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("embedded etcd ready at %s in %s", ep, time.Since(t0))

	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"http://" + ep},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get k = %v, want v", resp.Kvs)
	}
	// A 1 s lease must be granted as 1 s (small election timeout).
	lr, err := cli.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if lr.TTL != 1 {
		t.Errorf("granted TTL = %d s, want 1 s", lr.TTL)
	}
	cli.Close()

	t1 := time.Now()
	// stop is idempotent and safe to call concurrently.
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); stop() }()
	}
	wg.Wait()
	stop()
	t.Logf("stopped in %s", time.Since(t1))
}

func TestTwoServersDoNotCollide(t *testing.T) {
	ep1, stop1, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop1()
	ep2, stop2, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	if ep1 == ep2 {
		t.Fatalf("both servers at %s", ep1)
	}
}
