package backend

import (
	"strings"

	"github.com/distlock/distlock/internal/backend/consul"
	"github.com/distlock/distlock/internal/backend/etcd"
	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/backend/mysql"
	"github.com/distlock/distlock/internal/backend/postgres"
	"github.com/distlock/distlock/internal/backend/redis"
	"github.com/distlock/distlock/internal/backend/sqlstore"
	"github.com/distlock/distlock/internal/backend/zookeeper"
)

// registry is every engine, in the order help lists them: the default
// first. A new engine is one entry here.
var registry = []Engine{
	// A lock directory on this machine, the default (openFile, open.go).
	{
		Scheme: "file", Form: "file:///DIR", Name: "a local file directory",
		Caps:   Caps{Semaphore: true},
		Lists:  "reading the lock directory (a lock whose holder died is not listed)",
		Checks: "local filesystem (not NFS/CIFS), writable (a directory that cannot be created is a problem, not exit 69), flock(2) works",
		open:   openFile,
		locate: locateFile,
		kind:   (*file.Backend)(nil),
	},
	// The Redis topologies: one engine package, four kinds of URL. The
	// first speaks for all four in list's and doctor's help.
	opens(Engine{
		Scheme: "redis", TLS: "rediss", Form: "redis://HOST:PORT", Name: "a single Redis",
		Caps:   every,
		Lists:  "SCAN, never KEYS, which would block the server (on a cluster, every master)",
		Checks: "maxmemory-policy, persistence, replicas, Sentinel/Cluster behind a plain URL, ACL permissions, clock offset (TIME)",
	}, redis.ParseURL, redis.New, redisSettings, redisPlace),
	redisTopology("redis+sentinel", "redis+sentinel://HOST:PORT,…/MASTER", "Redis behind Sentinels",
		redis.ParseSentinelURL),
	redisTopology("redis+cluster", "redis+cluster://HOST:PORT,…", "a Redis Cluster",
		redis.ParseClusterURL),
	// Redlock refuses --limit (a semaphore's slots cannot be kept
	// consistent across independent masters), and its waiters poll.
	opens(Engine{
		Scheme: "redlock", TLS: "redlocks", TLSParam: true,
		Form: "redlock://HOST:PORT,HOST:PORT,HOST:PORT", Name: "Redlock over independent Redis masters",
	}, redis.ParseRedlockURL, redis.OpenRedlock, redisSettings, redisPlace),
	// The TLS files given by flags count where the URL names none.
	opens(Engine{
		Scheme: "etcd", TLS: "etcds", Form: "etcd://HOST:PORT,…", Name: "etcd",
		Caps: every, Lists: "one range read",
		Checks: "cluster health and size, minimum lease TTL, auth, TLS, the leader's clock rate (takes 3-7 seconds)",
	}, etcd.ParseURL, etcd.New, func(c *etcd.Config) settings {
		return settings{secret: &c.Password, caCert: &c.CACert, cert: &c.Cert, key: &c.Key, prefix: &c.Prefix, timeout: &c.DialTimeout}
	}, func(c etcd.Config) place { return place{hosts: c.Endpoints} }),
	// ZooKeeper takes no password.
	opens(Engine{
		Scheme: "zk", Form: "zk://HOST:PORT,…[/CHROOT]", Name: "ZooKeeper",
		Caps:   every,
		Lists:  "listing the prefix's node",
		Checks: "the session timeout granted for --ttl, TTL nodes allowed (holds), clock offset (the mtime of a write)",
	}, zookeeper.ParseURL, zookeeper.New, func(c *zookeeper.Config) settings {
		return settings{prefix: &c.Prefix, timeout: &c.ConnectTimeout}
	}, func(c zookeeper.Config) place { return place{hosts: c.Servers, path: c.Chroot} }),
	// The ACL token is the URL's password, else DISTLOCK_PASSWORD or
	// --password-file, else CONSUL_HTTP_TOKEN (read by the official client).
	opens(Engine{
		Scheme: "consul", TLS: "consuls", Form: "consul://HOST:PORT,…[/PATH]", Name: "Consul",
		Caps:   every,
		Lists:  "one recursive KV read of the prefix",
		Checks: "leader and peers, Raft applied index moving, session TTL bounds for --ttl, clock offset (the answering server's Date header)",
	}, consul.ParseURL, consul.New, func(c *consul.Config) settings {
		return settings{secret: &c.Token, prefix: &c.Prefix, timeout: &c.ConnectTimeout}
	}, func(c consul.Config) place {
		p := place{hosts: c.Addrs}
		if path := strings.Trim(c.Path, "/"); path != "" {
			p.path = "/" + path
		}
		return p
	}),
	// The options' password is used when the URL, PGPASSWORD and
	// ~/.pgpass give none.
	opens(Engine{
		Scheme: "postgres", Aliases: []string{"postgresql"}, Form: "postgres://USER@HOST:PORT/DB", Name: "PostgreSQL",
		Caps: every, Lists: "one query", Checks: sqlChecks,
	}, postgres.ParseURL, postgres.New, func(c *postgres.Config) settings { return sqlSettings(&c.Settings) }, postgresPlace),
	opens(Engine{
		Scheme: "mysql", Form: "mysql://USER@HOST:PORT/DB", Name: "MySQL/MariaDB",
		Caps: every, Lists: "one query", Checks: sqlChecks,
	}, mysql.ParseURL, mysql.New, func(c *mysql.Config) settings { return sqlSettings(&c.Settings) },
		func(c mysql.Config) place { return place{hosts: []string{c.Driver.Addr}, path: "/" + c.Driver.DBName} }),
}

// sqlChecks are the SQL engines' doctor checks (internal/backend/sqlstore).
const sqlChecks = "clock offset (the database's clock times the leases)"

// redisTopology is the entry of a topology redis.New serves that redis://
// speaks for in list's and doctor's help: its TLS scheme is rediss+..., and
// ?tls=true turns TLS on too.
func redisTopology(scheme, form, name string, parse func(string) (redis.Config, error)) Engine {
	return opens(Engine{
		Scheme: scheme, TLS: "rediss" + strings.TrimPrefix(scheme, "redis"), TLSParam: true,
		Form: form, Name: name,
		Caps: every,
	}, parse, redis.New, redisSettings, redisPlace)
}

// sqlSettings: the options' password is used when the URL has none.
func sqlSettings(s *sqlstore.Settings) settings {
	return settings{secret: &s.Password, prefix: &s.Prefix, timeout: &s.ConnectTimeout}
}

// redisSettings: the URL's password wins over the options'.
func redisSettings(c *redis.Config) settings {
	return settings{secret: &c.Password, prefix: &c.Prefix, timeout: &c.ConnectTimeout}
}

// postgresPlace: the host and the fallbacks pgx tries after it (a
// multi-host URL; also sslmode=prefer's), and the database.
func postgresPlace(c postgres.Config) place {
	p := place{hosts: []string{hostPort(c.Conn.Host, c.Conn.Port)}, path: "/" + c.Conn.Database}
	for _, f := range c.Conn.Fallbacks {
		p.hosts = append(p.hosts, hostPort(f.Host, f.Port))
	}
	return p
}
