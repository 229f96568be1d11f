package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
)

// singleEngine is one server process (redis, etcd, zookeeper, a Consul
// dev agent, postgres, mariadb), each contender reaching it through a fault proxy of its own.
type singleEngine struct {
	kind    string
	dir     string
	p       *server.Process
	proxies []*faultproxy.Proxy
	clock   *faketime
}

func startSingle(kind, dir string, contenders int) (*singleEngine, error) {
	start := map[string]func(string) (*server.Process, error){
		"redis": server.StartRedis, "etcd": server.StartEtcd, "zookeeper": server.StartZooKeeper,
		"postgres": server.StartPostgres, "mariadb": server.StartMariaDB, "consul": server.StartConsul,
	}[kind]
	p, err := start(dir)
	if err != nil {
		return nil, err
	}
	// one proxy per contender, and one more for the tool's own checks
	pxs, err := newProxies(p.Addr(), contenders+1)
	if err != nil {
		p.Close()
		return nil, err
	}
	return &singleEngine{kind: kind, dir: dir, p: p, proxies: pxs}, nil
}

func (e *singleEngine) url(i int) string {
	if i < 0 || i >= len(e.proxies) {
		i = len(e.proxies) - 1
	}
	addr := e.proxies[i].Addr()
	switch e.kind {
	case "redis":
		return "redis://" + addr
	case "etcd":
		return "etcd://" + addr
	case "zookeeper":
		return "zk://" + addr
	case "consul":
		return "consul://" + addr
	case "postgres":
		return "postgres://" + server.PostgresUser + "@" + addr + "/postgres?sslmode=disable"
	}
	return "mysql://" + server.MariaDBUser + "@" + addr + "/" + server.MariaDBDatabase
}

func (e *singleEngine) pause() error { return e.p.Stop() }
func (e *singleEngine) cont() error  { return e.p.Cont() }

func (e *singleEngine) restart() error {
	if e.kind == "redis" {
		return redisRestartKeep(e.p)
	}
	return e.p.Restart()
}

// wipe: the server killed and started again without its data (a Consul
// dev agent keeps its data in memory: restart alone empties it). PostgreSQL
// and MariaDB keep theirs in a private initdb'd directory that the tool
// does not rebuild yet.
func (e *singleEngine) wipe() error {
	var data string
	switch e.kind {
	case "redis":
		return redisWipe(e.p)
	case "consul":
		return e.p.Restart()
	case "etcd":
		data = filepath.Join(e.dir, "etcd.data")
	case "zookeeper":
		data = filepath.Join(e.dir, "zk.data", "version-2")
	default:
		return errUnsupported
	}
	if err := e.p.Kill(); err != nil {
		return err
	}
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	return e.p.Restart()
}

func (e *singleEngine) failover(func()) error { return errUnsupported }

func (e *singleEngine) partition(i int) (func(), error) {
	px := e.proxies[i]
	px.Pause()
	return px.Resume, nil
}

func (e *singleEngine) fakeClock(dir string) error {
	if e.kind != "redis" && e.kind != "postgres" && e.kind != "mariadb" {
		return errUnsupported
	}
	f, err := newFaketime(dir)
	if err != nil {
		return err
	}
	e.clock = f
	return e.p.RestartWithEnv(f.env())
}

func (e *singleEngine) jumpClock(d time.Duration) error {
	if e.clock == nil {
		return errUnsupported
	}
	return e.clock.jump(d)
}

func (e *singleEngine) close() {
	for _, px := range e.proxies {
		px.Close()
	}
	e.p.Close()
}
