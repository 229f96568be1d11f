package main

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/testenv/server"
)

// quorumEngine is a three-member etcd cluster, a three-server ZooKeeper
// ensemble or three Consul servers; distlock is given every member.
type quorumEngine struct{ c quorumCluster }

// quorumCluster is what the quorum engine uses of a started cluster.
type quorumCluster interface {
	Processes() []*server.Process
	URL() string // the backend URL naming every member
	Leader(context.Context) (*server.Process, error)
	Close() error
}

// quorumOf is the engine of cluster c, which its start returned with err.
func quorumOf(c quorumCluster, err error) (engine, error) {
	if err != nil {
		return nil, err
	}
	return &quorumEngine{c}, nil
}

func (e *quorumEngine) url(int) string { return e.c.URL() }
func (e *quorumEngine) pause() error   { return pauseAll(e.c.Processes()) }
func (e *quorumEngine) cont() error    { return contAll(e.c.Processes()) }

// restart is a rolling restart: each member killed and started again
// with its data, one after the other (the quorum stays).
func (e *quorumEngine) restart() error {
	for _, p := range e.c.Processes() {
		if err := p.Restart(); err != nil {
			return err
		}
	}
	return nil
}

func (e *quorumEngine) wipe() error { return errUnsupported }

// failover (kill-leader): SIGKILL the leader, leave it down a second
// while the others elect a new one, and start it again with its data.
func (e *quorumEngine) failover(arrived func()) error {
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
	arrived() // the other two elect a leader within the second
	return p.Restart()
}

func (e *quorumEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (e *quorumEngine) fakeClock(string) error        { return errUnsupported }
func (e *quorumEngine) jumpClock(time.Duration) error { return errUnsupported }
func (e *quorumEngine) close()                        { e.c.Close() }
