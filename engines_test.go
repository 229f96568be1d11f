package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alicebob/miniredis/v2"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/testenv/embedetcd"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
)

// engine is one way of running the scenarios: an engine and how to start a
// fresh instance of it for each script.
type engine struct {
	name string
	// kind groups engines that share engine-specific scenarios: file, redis,
	// etcd, zookeeper (testdata/script/<kind>/).
	kind string
	// family, when set, is a kind whose scenario conditions ([engine:redis])
	// this engine meets too: a Redis topology runs the Redis engine.
	family string
	// direct: the topology's client finds its servers' addresses by asking
	// the servers (Sentinel, Cluster), so no fault proxy can sit between
	// distlock and them, and the network/ scenarios do not run on it.
	direct bool
	// real: a real server process that can be stopped, killed and restarted.
	real bool
	// noExpiry: the engine cannot say when another client's lease expires
	// (a ZooKeeper or Consul session's time left is the server's alone):
	// status and busy lines show no "expires in" (the [expiry] condition).
	noExpiry bool
	// scheme is the scheme of the engine's URL: what the engine can do
	// (scenarios' [fair], [semaphore]) is its entry's in the registry
	// (internal/backend.Lookup).
	scheme string
	// deep: the default run (without DISTLOCK_TEST_FULL) runs every
	// scenario on this engine, not only its own and the smoke ones
	// (scripts_test.go, scope).
	deep bool
	// standIn names the real engine this in-process one stands in for
	// when that is not installed: then the default run goes deep on it.
	standIn string
	// start brings up a fresh instance for one script.
	start func(env *testscript.Env, st *engineState) error
	// available reports nil, or why the engine cannot run here.
	available func() error
}

// caps is what the engine can do: its scheme's entry in the registry.
func (e *engine) caps() backend.Caps {
	entry, ok := backend.Lookup(e.scheme)
	if !ok {
		panic("engines_test.go: engine " + e.name + " has the scheme " + e.scheme + ", which no engine registers")
	}
	return entry.Caps
}

// engineState is what a script's commands know of its engine.
type engineState struct {
	engine *engine
	url    string // DISTLOCK_BACKEND, through the proxy for network engines
	proxy  *faultproxy.Proxy
	server *server.Process
	mini   *miniredis.Miniredis
	// sentinel is the deployment of the redis-sentinel engine.
	sentinel *server.RedisSentinel
	// cluster is the deployment of the redis-cluster engine.
	cluster *server.RedisCluster
	// masters are the redlock engine's independent Redis masters.
	masters *server.RedisMasters
	// consul is the consul3 engine's three servers.
	consul *server.ConsulCluster
	// sessions: when the consul engine's sessions were created and renewed,
	// as its fault proxy forwarded them (commands_consul_sessions_test.go).
	sessions *consulSessions
	// etcdLeases: when the etcd engines' lease grants and keep-alives were
	// forwarded (commands_etcd_leases_test.go).
	etcdLeases *etcdLeases
	// harness is what the harness commands remember during the script
	// (commands_test.go).
	harness *harness
}

type stateKey struct{}

func stateOf(ts *testscript.TestScript) *engineState {
	return ts.Value(stateKey{}).(*engineState)
}

// requireServers: CI sets DISTLOCK_TEST_REQUIRE_SERVERS=1 so that real
// servers cannot be skipped silently.
func requireServers() bool { return os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" }

func engines() []*engine {
	return []*engine{
		{
			name: "file", scheme: "file", kind: "file", deep: true,
			available: func() error { return nil },
			start: func(env *testscript.Env, st *engineState) error {
				st.url = "file://" + filepath.Join(env.WorkDir, ".locks")
				return nil
			},
		},
		{
			name: "miniredis", scheme: "redis", kind: "redis", standIn: "redis-server",
			available: func() error { return nil },
			start: func(env *testscript.Env, st *engineState) error {
				m := miniredis.NewMiniRedis()
				if err := m.Start(); err != nil {
					return err
				}
				env.Defer(m.Close)
				st.mini = m
				return st.proxyTo(env, "redis", m.Addr())
			},
		},
		{
			name: "redis-server", scheme: "redis", kind: "redis", real: true, deep: true,
			available: binaryOnPath("redis-server"),
			start: func(env *testscript.Env, st *engineState) error {
				p, err := server.StartRedis(filepath.Join(env.WorkDir, ".redis"))
				if err != nil {
					return err
				}
				env.Defer(func() { p.Close() })
				st.server = p
				return st.proxyTo(env, "redis", p.Addr())
			},
		},
		{
			// A master, two replicas and three sentinels; distlock waits for
			// one replica to acknowledge every grant and renewal (wait=1).
			// Two replicas, so that after a failover the new master still
			// has one to acknowledge the holder's renewals.
			name: "redis-sentinel", scheme: "redis+sentinel", kind: "redis-sentinel", family: "redis", real: true, direct: true,
			available: binaryOnPath("redis-server"),
			start: func(env *testscript.Env, st *engineState) error {
				s, err := server.StartRedisSentinel(filepath.Join(env.WorkDir, ".redis-sentinel"), 2)
				if err != nil {
					return err
				}
				env.Defer(func() { s.Close() })
				st.sentinel, st.server = s, s.Master
				st.url = s.URL("?wait=1")
				env.Setenv("DISTLOCK_DIRECT_BACKEND", st.url)
				return nil
			},
		},
		{
			// Three masters sharing the hash slots.
			name: "redis-cluster", scheme: "redis+cluster", kind: "redis-cluster", family: "redis", real: true, direct: true,
			available: binaryOnPath("redis-server"),
			start: func(env *testscript.Env, st *engineState) error {
				c, err := server.StartRedisCluster(filepath.Join(env.WorkDir, ".redis-cluster"), 3)
				if err != nil {
					return err
				}
				env.Defer(func() { c.Close() })
				st.cluster, st.server = c, c.Nodes[0]
				st.url = c.URL()
				env.Setenv("DISTLOCK_DIRECT_BACKEND", st.url)
				return nil
			},
		},
		{
			// Redlock over three independent masters.
			name: "redlock", scheme: "redlock", kind: "redlock", real: true, direct: true,
			available: binaryOnPath("redis-server"),
			start: func(env *testscript.Env, st *engineState) error {
				m, err := server.StartRedisMasters(filepath.Join(env.WorkDir, ".redlock"), 3)
				if err != nil {
					return err
				}
				env.Defer(func() { m.Close() })
				st.masters, st.server = m, m.Nodes[0]
				st.url = m.URL()
				env.Setenv("DISTLOCK_DIRECT_BACKEND", st.url)
				return nil
			},
		},
		{
			name: "embedded-etcd", scheme: "etcd", kind: "etcd", standIn: "etcd",
			available: func() error { return nil },
			start: func(env *testscript.Env, st *engineState) error {
				ep, stop, err := embedetcd.Start(filepath.Join(env.WorkDir, ".etcd"))
				if err != nil {
					return err
				}
				env.Defer(stop)
				if err := st.proxyTo(env, "etcd", ep); err != nil {
					return err
				}
				st.etcdLeases = tapEtcdLeases(st.proxy)
				return nil
			},
		},
		{
			name: "etcd", scheme: "etcd", kind: "etcd", real: true,
			available: binaryOnPath("etcd"),
			start: func(env *testscript.Env, st *engineState) error {
				p, err := server.StartEtcd(filepath.Join(env.WorkDir, ".etcd"))
				if err != nil {
					return err
				}
				env.Defer(func() { p.Close() })
				st.server = p
				if err := st.proxyTo(env, "etcd", p.Addr()); err != nil {
					return err
				}
				st.etcdLeases = tapEtcdLeases(st.proxy)
				return nil
			},
		},
		{
			name: "zookeeper", scheme: "zk", kind: "zookeeper", real: true, noExpiry: true,
			available: serverAvailable("zookeeper"),
			start: func(env *testscript.Env, st *engineState) error {
				p, err := server.StartZooKeeper(filepath.Join(env.WorkDir, ".zookeeper"))
				if err != nil {
					return err
				}
				env.Defer(func() { p.Close() })
				st.server = p
				return st.proxyTo(env, "zk", p.Addr())
			},
		},
		{
			// consul agent -dev: one server, its data in memory.
			name: "consul", scheme: "consul", kind: "consul", real: true, noExpiry: true,
			available: serverAvailable("consul"),
			start: func(env *testscript.Env, st *engineState) error {
				p, err := server.StartConsul(filepath.Join(env.WorkDir, ".consul"))
				if err != nil {
					return err
				}
				env.Defer(func() { p.Close() })
				st.server = p
				if err := st.proxyTo(env, "consul", p.Addr()); err != nil {
					return err
				}
				st.sessions = tapConsulSessions(st.proxy)
				return nil
			},
		},
		{
			// Three Consul servers (-bootstrap-expect 3); the URL names all
			// three, with no proxy between, so that distlock follows a dead
			// server's peers. st.server is the first server.
			name: "consul3", scheme: "consul", kind: "consul3", family: "consul", real: true, direct: true, noExpiry: true,
			available: serverAvailable("consul"),
			start: func(env *testscript.Env, st *engineState) error {
				c, err := server.StartConsulCluster(filepath.Join(env.WorkDir, ".consul3"), 3)
				if err != nil {
					return err
				}
				env.Defer(func() { c.Close() })
				st.consul, st.server = c, c.Servers[0]
				st.url = "consul://" + c.Addrs()
				env.Setenv("DISTLOCK_DIRECT_BACKEND", st.url)
				return nil
			},
		},
		{
			name: "postgres", scheme: "postgres", kind: "postgres", real: true,
			available: serverAvailable("postgres"),
			start: func(env *testscript.Env, st *engineState) error {
				p, err := server.StartPostgres(filepath.Join(env.WorkDir, ".postgres"))
				if err != nil {
					return err
				}
				env.Defer(func() { p.Close() })
				st.server = p
				return st.proxyToURL(env, p.Addr(), func(addr string) string {
					return "postgres://" + server.PostgresUser + "@" + addr + "/postgres?sslmode=disable"
				})
			},
		},
		{
			name: "mariadb", scheme: "mysql", kind: "mysql", real: true,
			available: serverAvailable("mariadb"),
			start: func(env *testscript.Env, st *engineState) error {
				p, err := server.StartMariaDB(filepath.Join(env.WorkDir, ".mariadb"))
				if err != nil {
					return err
				}
				env.Defer(func() { p.Close() })
				st.server = p
				return st.proxyToURL(env, p.Addr(), func(addr string) string {
					return "mysql://" + server.MariaDBUser + "@" + addr + "/" + server.MariaDBDatabase
				})
			},
		},
	}
}

// proxyTo routes the engine's URL through a fault proxy, so that scenarios
// can pause or drop the traffic between distlock and the server.
func (st *engineState) proxyTo(env *testscript.Env, scheme, addr string) error {
	return st.proxyToURL(env, addr, func(a string) string { return fmt.Sprintf("%s://%s", scheme, a) })
}

// proxyToURL is proxyTo for engines whose URL says more than scheme and
// address: url makes the URL for an address.
func (st *engineState) proxyToURL(env *testscript.Env, addr string, url func(addr string) string) error {
	p, err := faultproxy.New(addr)
	if err != nil {
		return err
	}
	env.Defer(func() { p.Close() })
	st.proxy = p
	st.url = url(p.Addr())
	env.Setenv("DISTLOCK_DIRECT_BACKEND", url(addr))
	return nil
}

// serverAvailable: the harness can start a real server of kind (see
// server.Available).
func serverAvailable(kind string) func() error {
	return func() error { return server.Available(kind) }
}

func binaryOnPath(name string) func() error {
	return func() error {
		if _, err := lookPath(name); err != nil {
			return errors.New(name + " is not on PATH")
		}
		return nil
	}
}
