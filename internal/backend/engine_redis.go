package backend

import (
	"cmp"
	"context"

	"github.com/distlock/distlock/internal/backend/redis"
	"github.com/distlock/distlock/internal/lock"
)

// The Redis topologies: one engine package, four kinds of URL. The first
// speaks for all four in list's and doctor's help.
var (
	redisEngine = Engine{
		Scheme: "redis", TLS: "rediss", Form: "redis://HOST:PORT", Name: "a single Redis",
		Guarantee: redis.Guarantee(redis.Single, 0),
		Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
		Lists:     "SCAN, never KEYS, which would block the server (on a cluster, every master)",
		Checks:    "maxmemory-policy, persistence, replicas, Sentinel/Cluster behind a plain URL, ACL permissions, clock offset (TIME)",
		open:      openRedis(redis.ParseURL),
		kind:      (*redis.Backend)(nil),
	}
	sentinelEngine = Engine{
		Scheme: "redis+sentinel", TLS: "rediss+sentinel", TLSParam: true,
		Form: "redis+sentinel://HOST:PORT,…/MASTER", Name: "Redis behind Sentinels",
		Guarantee: redis.Guarantee(redis.Sentinel, 0),
		Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
		open:      openRedis(redis.ParseSentinelURL),
		kind:      (*redis.Backend)(nil),
	}
	clusterEngine = Engine{
		Scheme: "redis+cluster", TLS: "rediss+cluster", TLSParam: true,
		Form: "redis+cluster://HOST:PORT,…", Name: "a Redis Cluster",
		Guarantee: redis.Guarantee(redis.Cluster, 0),
		Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
		open:      openRedis(redis.ParseClusterURL),
		kind:      (*redis.Backend)(nil),
	}
	// Redlock refuses --limit (a semaphore's slots cannot be kept
	// consistent across independent masters), and its waiters poll.
	redlockEngine = Engine{
		Scheme: "redlock", TLS: "redlocks", TLSParam: true,
		Form: "redlock://HOST:PORT,HOST:PORT,HOST:PORT", Name: "Redlock over independent Redis masters",
		Guarantee: redis.RedlockGuarantee(3),
		Caps:      Caps{Holds: true, Doctor: true},
		open:      openRedlock,
		kind:      (*redis.Redlock)(nil),
	}
)

// openRedis opens one of the topologies redis.New serves, its URL read
// by parse.
func openRedis(parse func(string) (redis.Config, error)) func(context.Context, string, Options) (lock.Backend, error) {
	return func(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
		cfg, err := parse(rawURL)
		if err != nil {
			return nil, err
		}
		cfg.Password = cmp.Or(cfg.Password, opts.Password)
		cfg.Prefix = opts.Prefix
		cfg.ConnectTimeout = opts.ConnectTimeout
		return redis.New(ctx, cfg)
	}
}

func openRedlock(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	cfg, err := redis.ParseRedlockURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.Password = cmp.Or(cfg.Password, opts.Password)
	cfg.Prefix = opts.Prefix
	cfg.ConnectTimeout = opts.ConnectTimeout
	return redis.OpenRedlock(ctx, cfg)
}
