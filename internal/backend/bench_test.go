package backend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/embedetcd"
	"github.com/distlock/distlock/internal/testenv/server"
)

// benchEngines starts each engine the machine has and returns its URL.
func benchEngines(b *testing.B) map[string]string {
	urls := map[string]string{"file": "file://" + b.TempDir()}
	m := miniredis.RunT(b)
	urls["miniredis"] = "redis://" + m.Addr()
	if p, err := server.StartRedis(b.TempDir()); err == nil {
		b.Cleanup(func() { p.Close() })
		urls["redis-server"] = "redis://" + p.Addr()
	}
	if ep, stop, err := embedetcd.Start(b.TempDir()); err == nil {
		b.Cleanup(stop)
		urls["embedded-etcd"] = "etcd://" + ep
	}
	if p, err := server.StartEtcd(b.TempDir()); err == nil {
		b.Cleanup(func() { p.Close() })
		urls["etcd"] = "etcd://" + p.Addr()
	}
	return urls
}

// BenchmarkAcquireRenewRelease measures one lock's life on each engine:
// try-acquire, one renewal, release — the engine round trips of a
// `distlock run` (process start and the child are not included).
func BenchmarkAcquireRenewRelease(b *testing.B) {
	urls := benchEngines(b)
	for _, name := range []string{"file", "miniredis", "redis-server", "embedded-etcd", "etcd"} {
		url, ok := urls[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			be, err := backend.Open(ctx, url, backend.Options{Prefix: "bench", ConnectTimeout: 5 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			for i := 0; b.Loop(); i++ {
				l, err := lock.TryOnce(ctx, be, lock.Request{Key: "bench", TTL: 5 * time.Second, Owner: fmt.Sprint("o", i)})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Renew(ctx); err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
