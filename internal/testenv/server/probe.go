package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
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

// redisAnswers sends an inline PING and expects +PONG (not, e.g.,
// -LOADING); unless pid is 0 it then checks with INFO that the server that
// answered is process pid.
func redisAnswers(ctx context.Context, addr string, pid int) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	if pid == 0 {
		return nil
	}

	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return err
	}
	line, err = r.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		return fmt.Errorf("INFO answered %q", strings.TrimSpace(line))
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return err
	}
	want := "process_id:" + strconv.Itoa(pid) + "\r\n"
	if !strings.Contains(string(info), want) {
		return fmt.Errorf("the server on %s is not process %d", addr, pid)
	}
	return nil
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
