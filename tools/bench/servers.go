package main

import (
	"path/filepath"

	"github.com/distlock/distlock/internal/testenv/server"
)

// servers is the engines the bench measures, with the servers it started.
type servers struct {
	engines             []engine
	redisAddr, etcdAddr string
	procs               []*server.Process
}

func (s *servers) close() {
	for _, p := range s.procs {
		p.Close()
	}
}

// starters are how each server is started: the tests' settings, or with
// defaults set the servers' own default connection limits (ZooKeeper's
// maxClientCnxns, PostgreSQL's and MariaDB's max_connections), which the
// scale mode measures against.
func starters(defaults bool) (zk, pg, my func(string) (*server.Process, error)) {
	if !defaults {
		return server.StartZooKeeper, server.StartPostgres, server.StartMariaDB
	}
	return func(dir string) (*server.Process, error) {
			return server.StartZooKeeperMaxClientCnxns(dir, server.ServerDefault)
		}, func(dir string) (*server.Process, error) {
			return server.StartPostgresMaxConnections(dir, server.ServerDefault)
		}, func(dir string) (*server.Process, error) {
			return server.StartMariaDBMaxConnections(dir, server.ServerDefault)
		}
}

// startServers starts every server installed (skipping, with a note,
// what is missing) and names the engines on them, the file engine first.
func startServers(tmp string, defaults bool, note func(string, ...any)) *servers {
	s := &servers{engines: []engine{{name: "file", url: "file://" + filepath.Join(tmp, "locks")}}}
	startZK, startPG, startMy := starters(defaults)
	if p, err := server.StartRedis(filepath.Join(tmp, "redis")); err == nil {
		s.procs, s.redisAddr = append(s.procs, p), p.Addr()
		s.engines = append(s.engines, engine{name: "redis", url: "redis://" + p.Addr(), counter: redisCounter{p.Addr()}, proc: p})
	} else {
		note("redis: %v (skipped)", err)
	}
	if p, err := server.StartEtcd(filepath.Join(tmp, "etcd")); err == nil {
		s.procs, s.etcdAddr = append(s.procs, p), p.Addr()
		s.engines = append(s.engines, engine{name: "etcd", url: "etcd://" + p.Addr(), counter: etcdCounter{p.Addr()}, proc: p})
	} else {
		note("etcd: %v (skipped)", err)
	}
	if p, err := startZK(filepath.Join(tmp, "zookeeper")); err == nil {
		s.procs = append(s.procs, p)
		e := engine{name: "zookeeper", url: "zk://" + p.Addr(), proc: p}
		if c, err := newZKCounter(p.Addr()); err == nil {
			e.counter = c
		} else {
			note("zookeeper: requests not counted: %v", err)
		}
		s.engines = append(s.engines, e)
	} else {
		note("zookeeper: %v (skipped)", err)
	}
	if p, err := startPG(filepath.Join(tmp, "postgres")); err == nil {
		s.procs = append(s.procs, p)
		e := engine{name: "postgres", url: "postgres://" + server.PostgresUser + "@" + p.Addr() + "/postgres?sslmode=disable", proc: p}
		if defaults { // the scale mode's long queues
			e.queueCounter = sqlCounter(pgCounter{e.url}, note)
		}
		s.engines = append(s.engines, e)
	} else {
		note("postgres: %v (skipped)", err)
	}
	if p, err := startMy(filepath.Join(tmp, "mariadb")); err == nil {
		s.procs = append(s.procs, p)
		e := engine{name: "mariadb", url: "mysql://" + server.MariaDBUser + "@" + p.Addr() + "/" + server.MariaDBDatabase, proc: p}
		if defaults {
			e.queueCounter = sqlCounter(myCounter{p.Addr()}, note)
		}
		s.engines = append(s.engines, e)
	} else {
		note("mariadb: %v (skipped)", err)
	}
	return s
}

// sqlCounter is c ready to count, or nil (with a note) when it cannot.
func sqlCounter(c statCounter, note func(string, ...any)) counter {
	sc, err := newSettledCounter(c)
	if err != nil {
		note("%s: requests not counted: %v", c.what(), err)
		return nil
	}
	return sc
}
