package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
