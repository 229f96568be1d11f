package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/testenv/server"
)

// sentinelEngine is a master, one replica and three sentinels.
type sentinelEngine struct {
	s     *server.RedisSentinel
	query string
	lag   time.Duration // how long the replicas lag before a failover
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

func (e *sentinelEngine) restart() error { return e.onMaster(redisRestartKeep) }
func (e *sentinelEngine) wipe() error    { return e.onMaster(redisWipe) }

// onMaster does act (a restart) to the master, then gives it the role the
// sentinels give it.
func (e *sentinelEngine) onMaster(act func(*server.Process) error) error {
	p, _, err := e.master()
	if err != nil {
		return err
	}
	if err := act(p); err != nil {
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

// failover lets the replicas lag first (frozen for longer than a TTL, so
// that nothing the master granted or renewed meanwhile reaches them and
// their copies of older leases run out), then SIGKILLs the master,
// continues the replicas and has a sentinel fail over at once. Once every
// sentinel names the promoted replica a newcomer arrives, and the old
// master starts again empty and rejoins as a replica. Without wait= the
// promoted replica lacks the lease: the documented limit of asynchronous
// replication. With wait=1 no renewal was acknowledged while the replicas
// lagged, so the holder stopped its command before its lease could end.
func (e *sentinelEngine) failover(arrived func()) error {
	p, addr, err := e.master()
	if err != nil {
		return err
	}
	var replicas []*server.Process
	for _, n := range e.s.Nodes() {
		if n != p {
			replicas = append(replicas, n)
		}
	}
	if err := pauseAll(replicas); err != nil {
		return err
	}
	time.Sleep(e.lag)
	killErr := p.Kill()
	if err := contAll(replicas); err != nil {
		return err
	}
	if killErr != nil {
		return killErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.forceFailover(ctx); err != nil {
		return err
	}
	if _, err := e.s.WaitFailover(ctx, addr, 0); err != nil {
		return err
	}
	arrived()
	if err := redisWipe(p); err != nil {
		return err
	}
	return e.alignRole(p)
}

// forceFailover asks a sentinel to fail over now (SENTINEL FAILOVER: no
// down-after, no vote), so that the failover is quicker than a lease. A
// replica just continued counts as down until a sentinel's next ping
// (every second): until then the answer is NOGOODSLAVE, and it asks
// again. A failover the sentinels began by themselves (INPROG) does too.
func (e *sentinelEngine) forceFailover(ctx context.Context) error {
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: e.s.Sentinels[0].Addr(), MaxRetries: -1})
	defer sc.Close()
	for {
		err := sc.Failover(ctx, server.SentinelMaster).Err()
		switch {
		case err == nil || strings.HasPrefix(err.Error(), "INPROG"):
			return nil
		case !strings.HasPrefix(err.Error(), "NOGOODSLAVE"):
			return fmt.Errorf("SENTINEL FAILOVER: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("SENTINEL FAILOVER: %w (%w)", err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (e *sentinelEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (e *sentinelEngine) fakeClock(string) error        { return errUnsupported }
func (e *sentinelEngine) jumpClock(time.Duration) error { return errUnsupported }
func (e *sentinelEngine) close()                        { e.s.Close() }
