package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
)

var engineNames = []string{"file", "redis", "redis-sentinel", "redis-sentinel-wait1", "redis-cluster", "redlock", "etcd", "etcd3", "zookeeper", "zookeeper3", "consul", "consul3", "postgres", "mariadb"}

// errUnsupported: this engine cannot suffer this fault (or the tool cannot
// inflict it yet); the row is skipped with the reason.
var errUnsupported = errors.New("unsupported")

// engine is a running deployment of one engine, fresh for one row.
type engine interface {
	// url is the backend URL contender i uses (through its own fault
	// proxy where the engine has one address).
	url(contender int) string
	pause() error
	cont() error
	restart() error // kill every server process, start again with its data
	wipe() error    // kill, lose the data, start again
	// failover fails the engine over to another member; arrived is
	// called once the new one serves, for a newcomer's run.
	failover(arrived func()) error
	partition(contender int) (heal func(), err error)
	// fakeClock restarts the server under faketime (before the workload);
	// jumpClock then moves its wall clock forward.
	fakeClock(dir string) error
	jumpClock(d time.Duration) error
	close()
}

// startEngine starts engine name in dir with a fault proxy per contender
// where the engine has a single address; ttl is the contenders' lease
// (a Sentinel's replicas lag past it before a failover).
func startEngine(name, dir string, contenders int, ttl time.Duration) (engine, error) {
	switch name {
	case "file":
		return fileEngine{dir: filepath.Join(dir, "locks")}, nil
	case "redis", "etcd", "zookeeper", "consul", "postgres", "mariadb":
		return startSingle(name, dir, contenders)
	case "redis-sentinel", "redis-sentinel-wait1":
		s, err := server.StartRedisSentinel(dir, 1)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.WaitAcquainted(ctx); err != nil {
			s.Close()
			return nil, err
		}
		q := ""
		if name == "redis-sentinel-wait1" {
			q = "?wait=1"
		}
		return &sentinelEngine{s: s, query: q, lag: 3 * ttl / 2}, nil
	case "redis-cluster":
		c, err := server.StartRedisCluster(dir, 3)
		if err != nil {
			return nil, err
		}
		return &multiEngine{nodes: c.Nodes, u: c.URL(), closer: c.Close}, nil
	case "etcd3":
		return quorumOf(server.StartEtcdCluster(dir, 3))
	case "zookeeper3":
		return quorumOf(server.StartZooKeeperEnsemble(dir, 3))
	case "consul3":
		return quorumOf(server.StartConsulCluster(dir, 3))
	case "redlock":
		m, err := server.StartRedisMasters(dir, 3)
		if err != nil {
			return nil, err
		}
		return &multiEngine{nodes: m.Nodes, u: m.URL(), closer: m.Close, redlock: true}, nil
	}
	return nil, fmt.Errorf("unknown engine %q", name)
}

// fileEngine: a lock directory on this machine; no server to fault.
type fileEngine struct{ dir string }

func (f fileEngine) url(int) string              { return "file://" + f.dir }
func (fileEngine) pause() error                  { return errUnsupported }
func (fileEngine) cont() error                   { return nil }
func (fileEngine) restart() error                { return errUnsupported }
func (fileEngine) wipe() error                   { return errUnsupported }
func (fileEngine) failover(func()) error         { return errUnsupported }
func (fileEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (fileEngine) fakeClock(string) error        { return errUnsupported }
func (fileEngine) jumpClock(time.Duration) error { return errUnsupported }
func (fileEngine) close()                        {}

// pauseAll stops every process of every given server; on an error it
// continues the ones it stopped.
func pauseAll(ps []*server.Process) error {
	for i, p := range ps {
		if err := p.Stop(); err != nil {
			contAll(ps[:i])
			return err
		}
	}
	return nil
}

func contAll(ps []*server.Process) error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Cont())
	}
	return errors.Join(errs...)
}

// redisRestartKeep restarts a redis-server with its data: SHUTDOWN SAVE
// writes dump.rdb and exits in one step (nothing is granted after the
// snapshot), and the restarted server loads it from its directory.
func redisRestartKeep(p *server.Process) error {
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Do(ctx, "SHUTDOWN", "SAVE").Err() // the answer is the closed connection
	return p.Restart()
}

// redisWipe restarts a redis-server empty (it has no persistence; a dump
// left by an earlier restart-server is removed first).
func redisWipe(p *server.Process) error {
	if err := p.Kill(); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(p.Dir(), "dump.rdb")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return p.Restart()
}

func newProxies(target string, n int) ([]*faultproxy.Proxy, error) {
	var ps []*faultproxy.Proxy
	for range n {
		px, err := faultproxy.New(target)
		if err != nil {
			for _, p := range ps {
				p.Close()
			}
			return nil, err
		}
		ps = append(ps, px)
	}
	return ps, nil
}
