package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// waitReplicasOnline waits until the master at addr says it is a master
// with at least n replicas online.
func waitReplicasOnline(ctx context.Context, addr string, n int) error {
	c := redisClient(addr)
	defer c.Close()
	return pollUntil(ctx, 10*time.Millisecond, "redis "+addr, func() error {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		online := strings.Count(info, "state=online")
		if strings.Contains(info, "role:master") && online >= n {
			return nil
		}
		return fmt.Errorf("%d of %d replicas online", online, n)
	})
}

// waitReplicasAck waits until n replicas acknowledge a write to the master
// at addr (WAIT): for up to about a second after their first sync, replicas
// reported online do not acknowledge yet.
func waitReplicasAck(ctx context.Context, addr string, n int) error {
	c := redisClient(addr)
	defer c.Close()
	const probe = "distlock-harness:replicas-ack"
	defer c.Del(context.WithoutCancel(ctx), probe)
	return pollUntil(ctx, 10*time.Millisecond, "redis "+addr, func() error {
		var wait *goredis.Cmd
		_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			p.Set(ctx, probe, "1", 0)
			wait = p.Do(ctx, "WAIT", n, 100)
			return nil
		})
		if err != nil {
			return err
		}
		if acked, _ := wait.Int64(); acked < int64(n) {
			return fmt.Errorf("%d of %d replicas acknowledged a write", acked, n)
		}
		return nil
	})
}
