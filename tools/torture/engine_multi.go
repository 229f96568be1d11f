package main

import (
	"time"

	"github.com/distlock/distlock/internal/testenv/server"
)

// multiEngine is Redis Cluster (three masters) or Redlock (three
// independent masters): one URL naming every node.
type multiEngine struct {
	nodes   []*server.Process
	u       string
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
	return redisWipe(e.nodes[0])
}

func (e *multiEngine) failover(func()) error         { return errUnsupported }
func (e *multiEngine) partition(int) (func(), error) { return nil, errUnsupported }
func (e *multiEngine) fakeClock(string) error        { return errUnsupported }
func (e *multiEngine) jumpClock(time.Duration) error { return errUnsupported }
func (e *multiEngine) close()                        { e.closer() }
