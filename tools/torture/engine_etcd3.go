package main

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/testenv/server"
)

// etcdClusterEngine is three etcd members; distlock is given all three.
type etcdClusterEngine struct {
	c *server.EtcdCluster
}

func (e *etcdClusterEngine) url(int) string { return "etcd://" + e.c.Endpoints() }
func (e *etcdClusterEngine) pause() error   { return pauseAll(e.c.Members) }
func (e *etcdClusterEngine) cont() error    { return contAll(e.c.Members) }

// restart is a rolling restart: each member killed and started again
// with its data, one after the other (the quorum stays).
func (e *etcdClusterEngine) restart() error {
	for _, p := range e.c.Members {
		if err := p.Restart(); err != nil {
			return err
		}
	}
	return nil
}

func (e *etcdClusterEngine) wipe() error { return errUnsupported }

// failover (kill-leader): SIGKILL the leader, leave it down for a second
// while the others elect a new one, and start it again with its data.
func (e *etcdClusterEngine) failover() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := e.c.Leader(ctx)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil {
		return err
	}
	time.Sleep(time.Second)
	return p.Restart()
}

func (e *etcdClusterEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (e *etcdClusterEngine) fakeClock(string) error        { return errUnsupported }
func (e *etcdClusterEngine) jumpClock(time.Duration) error { return errUnsupported }
func (e *etcdClusterEngine) close()                        { e.c.Close() }
