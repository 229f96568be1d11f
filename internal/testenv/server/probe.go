package server

import (
	"context"
	"io"
	"net"
	"time"
)

// dialProbe connects to addr for a probe that must end by ctx's deadline
// (or in a second when ctx has none).
func dialProbe(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Second)
	}
	if err := c.SetDeadline(deadline); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// FourLetterWord sends a ZooKeeper four-letter command ("srvr", "mntr",
// "cons"...) to addr and returns the whole answer.
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(c, 1<<20))
	return string(b), err
}
