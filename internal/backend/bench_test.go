package backend_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/distlock/distlock/internal/acquire"

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
	if p, err := server.StartZooKeeper(b.TempDir()); err == nil {
		b.Cleanup(func() { p.Close() })
		urls["zookeeper"] = "zk://" + p.Addr()
	}
	if p, err := server.StartPostgres(b.TempDir()); err == nil {
		b.Cleanup(func() { p.Close() })
		urls["postgres"] = "postgres://" + server.PostgresUser + "@" + p.Addr() + "/postgres?sslmode=disable"
	}
	if p, err := server.StartMariaDB(b.TempDir()); err == nil {
		b.Cleanup(func() { p.Close() })
		urls["mariadb"] = "mysql://" + server.MariaDBUser + "@" + p.Addr() + "/" + server.MariaDBDatabase
	}
	return urls
}

// benchNames is the order engines are reported in.
var benchNames = []string{"file", "miniredis", "redis-server", "embedded-etcd", "etcd", "zookeeper", "postgres", "mariadb"}

// BenchmarkAcquireRenewRelease measures one lock's life on each engine:
// try-acquire, one renewal, release — the engine round trips of a
// `distlock run` (process start and the child are not included).
func BenchmarkAcquireRenewRelease(b *testing.B) {
	urls := benchEngines(b)
	for _, name := range benchNames {
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

// BenchmarkHandover measures how long a waiter takes to get the lock once
// its holder releases it (wait policy included: notifications, polling),
// and reports the median as handover-p50-ms.
func BenchmarkHandover(b *testing.B) {
	urls := benchEngines(b)
	for _, name := range benchNames {
		url, ok := urls[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			open := func() lock.Backend {
				be, err := backend.Open(ctx, url, backend.Options{Prefix: "bench", ConnectTimeout: 5 * time.Second})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { be.Close() })
				return be
			}
			holder, waiter := open(), open()
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				l, err := lock.TryOnce(ctx, holder, lock.Request{Key: "handover", TTL: 10 * time.Second, Owner: fmt.Sprint("h", i)})
				if err != nil {
					b.Fatal(err)
				}
				got := make(chan time.Time, 1)
				waiting := make(chan struct{})
				go func() {
					w, err := acquire.Acquire(ctx, waiter, lock.Request{Key: "handover", TTL: 10 * time.Second, Owner: fmt.Sprint("w", i)},
						acquire.Options{Wait: 30 * time.Second, Progress: func(lock.Holder) {
							select {
							case <-waiting:
							default:
								close(waiting)
							}
						}})
					at := time.Now()
					if err != nil {
						b.Error(err)
					} else {
						_ = w.Release(ctx)
					}
					got <- at
				}()
				<-waiting                         // the waiter found the key busy
				time.Sleep(50 * time.Millisecond) // let it settle into its wait (set-up, not an assertion)
				released := time.Now()
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
				took = append(took, (<-got).Sub(released))
			}
			slices.Sort(took)
			if len(took) > 0 {
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "handover-p50-ms")
			}
		})
	}
}
