package server

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestRedisCluster: three masters share the slots; a cluster client
// writes keys whose slots every node serves.
func TestRedisCluster(t *testing.T) {
	start := time.Now()
	c, err := StartRedisCluster(t.TempDir(), 3)
	if errors.Is(err, ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Logf("started in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{c.Nodes[0].Addr()}})
	defer cc.Close()
	var mu sync.Mutex // ForEachMaster calls back concurrently
	masters := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if err := cc.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		keys, err := n.Keys(ctx, "*").Result()
		if len(keys) > 0 {
			mu.Lock()
			masters[n.Options().Addr] = true
			mu.Unlock()
		}
		return err
	})
	if err != nil || len(masters) != 3 {
		t.Fatalf("keys on %d masters (%v), want 3", len(masters), err)
	}
}
