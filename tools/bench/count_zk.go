package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/testenv/server"
)

// zkCounter counts the packets ZooKeeper received (srvr's "Received").
type zkCounter struct {
	addr string
	self int64 // what one srvr adds to Received
}

// newZKCounter measures what a srvr adds to Received itself, on a server
// nobody else is using yet.
func newZKCounter(addr string) (zkCounter, error) {
	c := zkCounter{addr: addr}
	a, err := c.received()
	if err != nil {
		return c, err
	}
	b, err := c.received()
	if err != nil {
		return c, err
	}
	c.self = b - a
	return c, nil
}

func (c zkCounter) what() string {
	return fmt.Sprintf("packets ZooKeeper received (srvr's Received, less the bench's own srvr: %d each): requests, session pings and connects; not by command", c.self)
}

func (c zkCounter) begin() (window, error) {
	return beginDiff(c.received, func(before, after int64) Count {
		return Count{Requests: after - before - c.self}
	})
}

func (c zkCounter) received() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := server.FourLetterWord(ctx, c.addr, "srvr")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Received:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("srvr: no Received in %q", out)
}
