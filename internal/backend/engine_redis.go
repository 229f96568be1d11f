package backend

import (
	"strings"

	"github.com/distlock/distlock/internal/backend/redis"
)

// The Redis topologies: one engine package, four kinds of URL. The first
// speaks for all four in list's and doctor's help.
var (
	redisEngine = opens(Engine{
		Scheme: "redis", TLS: "rediss", Form: "redis://HOST:PORT", Name: "a single Redis",
		Guarantee: redis.Guarantee(redis.Single, 0), Caps: every,
		Lists:  "SCAN, never KEYS, which would block the server (on a cluster, every master)",
		Checks: "maxmemory-policy, persistence, replicas, Sentinel/Cluster behind a plain URL, ACL permissions, clock offset (TIME)",
	}, redis.ParseURL, redis.New, redisSettings)
	sentinelEngine = redisTopology("redis+sentinel", "redis+sentinel://HOST:PORT,…/MASTER", "Redis behind Sentinels",
		redis.Sentinel, redis.ParseSentinelURL)
	clusterEngine = redisTopology("redis+cluster", "redis+cluster://HOST:PORT,…", "a Redis Cluster",
		redis.Cluster, redis.ParseClusterURL)
	// Redlock refuses --limit (a semaphore's slots cannot be kept
	// consistent across independent masters), and its waiters poll.
	redlockEngine = opens(Engine{
		Scheme: "redlock", TLS: "redlocks", TLSParam: true,
		Form: "redlock://HOST:PORT,HOST:PORT,HOST:PORT", Name: "Redlock over independent Redis masters",
		Guarantee: redis.RedlockGuarantee(3),
		Caps:      Caps{Holds: true, Doctor: true},
	}, redis.ParseRedlockURL, redis.OpenRedlock, redisSettings)
)

// redisTopology is the entry of a topology redis.New serves that redis://
// speaks for in list's and doctor's help: its TLS scheme is rediss+..., and
// ?tls=true turns TLS on too.
func redisTopology(scheme, form, name string, topo redis.Topology, parse func(string) (redis.Config, error)) Engine {
	return opens(Engine{
		Scheme: scheme, TLS: "rediss" + strings.TrimPrefix(scheme, "redis"), TLSParam: true,
		Form: form, Name: name,
		Guarantee: redis.Guarantee(topo, 0), Caps: every,
	}, parse, redis.New, redisSettings)
}

// redisSettings: the URL's password wins over the options'.
func redisSettings(c *redis.Config) settings {
	return settings{secret: &c.Password, prefix: &c.Prefix, timeout: &c.ConnectTimeout}
}
