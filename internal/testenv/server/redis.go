package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StartRedis starts redis-server on a free loopback port with no
// persistence, dir (created if needed) as its working directory and its log
// in dir/redis.log, and waits until it answers PING. Use a separate dir per
// server. It returns an error wrapping ErrNoBinary when redis-server is not
// on PATH.
func StartRedis(dir string) (*Process, error) {
	return startRedis(dir, "redis-server", nil)
}

// startRedis starts redis-server in dir as StartRedis does, with extra(port)
// appended to its arguments (a replica's --replicaof, cluster settings).
func startRedis(dir, name string, extra func(port string) []string) (*Process, error) {
	return startRedisServer(dir, name, "redis.log", func(dir, port string) ([]string, error) {
		args := []string{
			"--port", port,
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--dir", dir,
			"--logfile", "", // stdout, which is the log file
		}
		if extra != nil {
			args = append(args, extra(port)...)
		}
		return args, nil
	})
}

// startRedisServer starts redis-server (name, for messages) on a free
// loopback port with args(dir, port) as its arguments, dir (created if
// needed) as its working directory and its log in dir/logName, and waits
// until it answers PING as the process it started.
func startRedisServer(dir, name, logName string, args func(dir, port string) ([]string, error)) (*Process, error) {
	bin, dir, err := binAndDir("redis-server", dir)
	if err != nil {
		return nil, err
	}
	return startFresh(1, nil, func(ports []int) (spec, error) {
		port := strconv.Itoa(ports[0])
		addr := net.JoinHostPort("127.0.0.1", port)
		a, err := args(dir, port)
		if err != nil {
			return spec{}, err
		}
		return spec{
			name:    name,
			bin:     bin,
			dir:     dir,
			args:    a,
			env:     os.Environ(),
			logPath: filepath.Join(dir, logName),
			addr:    addr,
			probe: func(ctx context.Context, pid int) error {
				return redisAnswers(ctx, addr, pid)
			},
		}, nil
	})
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
