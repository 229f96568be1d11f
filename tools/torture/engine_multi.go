package main

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/testenv/server"
)

// multiEngine is Redis Cluster (three masters) or Redlock (three
// independent masters): one URL naming every node.
type multiEngine struct {
	nodes   []*server.Process
	u       string
	dir     string
	redlock bool
	closer  func() error
}

func (e *multiEngine) url(int) string { return e.u }
func (e *multiEngine) pause() error   { return pauseAll(e.nodes) }
func (e *multiEngine) cont() error    { return contAll(e.nodes) }

// restart: Redlock restarts one master (the first) with its data; a
// cluster node's restart is not built.
func (e *multiEngine) restart() error {
	if !e.redlock {
		return errUnsupported
	}
	return redisRestartKeep(e.nodes[0])
}

// wipe: Redlock loses one master's data (the first); the quorum must keep
// the lock.
func (e *multiEngine) wipe() error {
	if !e.redlock {
		return errUnsupported
	}
	return redisWipe(e.nodes[0], filepath.Join(e.dir, "node0"))
}

func (e *multiEngine) failover() error               { return errUnsupported }
func (e *multiEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (e *multiEngine) fakeClock(string) error        { return errUnsupported }
func (e *multiEngine) jumpClock(time.Duration) error { return errUnsupported }
func (e *multiEngine) close()                        { e.closer() }

// sentinelEngine is a master, one replica and three sentinels.
type sentinelEngine struct {
	s     *server.RedisSentinel
	query string
	dir   string
}

func (e *sentinelEngine) url(int) string { return e.s.URL(e.query) }

// pause freezes every data node and every sentinel (freezing the master
// alone would be a failover).
func (e *sentinelEngine) pause() error {
	return pauseAll(append(e.s.Nodes(), e.s.Sentinels...))
}

func (e *sentinelEngine) cont() error {
	return contAll(append(e.s.Nodes(), e.s.Sentinels...))
}

func (e *sentinelEngine) master() (*server.Process, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, err := e.s.MasterAddr(ctx)
	if err != nil {
		return nil, "", err
	}
	return e.s.Node(addr), addr, nil
}

func (e *sentinelEngine) restart() error {
	p, _, err := e.master()
	if err != nil {
		return err
	}
	if err := redisRestartKeep(p); err != nil {
		return err
	}
	return e.alignRole(p)
}

func (e *sentinelEngine) wipe() error {
	p, _, err := e.master()
	if err != nil {
		return err
	}
	if err := redisWipe(p, e.nodeDir(p)); err != nil {
		return err
	}
	return e.alignRole(p)
}

// alignRole gives a restarted node the role the sentinels give it. In
// production Sentinel rewrites each node's config file (CONFIG REWRITE)
// when roles change, so a restarted node comes back in its current role;
// the test nodes have no config file and would come back in the role of
// their command line (a replica of the first master), which the
// sentinels leave alone for tens of seconds: a harness artifact, not a
// fault distlock should meet.
func (e *sentinelEngine) alignRole(p *server.Process) error {
	_, addr, err := e.master()
	if err != nil {
		return err
	}
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if addr == p.Addr() {
		return c.Do(ctx, "REPLICAOF", "NO", "ONE").Err()
	}
	host, port, _ := net.SplitHostPort(addr)
	return c.Do(ctx, "REPLICAOF", host, port).Err()
}

func (e *sentinelEngine) nodeDir(p *server.Process) string {
	if p == e.s.Master {
		return filepath.Join(e.dir, "master")
	}
	for i, r := range e.s.Replicas {
		if r == p {
			return filepath.Join(e.dir, "replica"+strconv.Itoa(i))
		}
	}
	return e.dir
}

// failover SIGKILLs the master, waits until the sentinels have promoted
// the replica, and starts the old master again (empty: it rejoins as a
// replica of the new one).
func (e *sentinelEngine) failover() error {
	p, addr, err := e.master()
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.s.WaitFailover(ctx, addr, 0); err != nil {
		return err
	}
	if err := redisWipe(p, e.nodeDir(p)); err != nil {
		return err
	}
	return e.alignRole(p)
}

func (e *sentinelEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (e *sentinelEngine) fakeClock(string) error        { return errUnsupported }
func (e *sentinelEngine) jumpClock(time.Duration) error { return errUnsupported }
func (e *sentinelEngine) close()                        { e.s.Close() }
