package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the sentinels of StartRedisSentinel monitor.
const SentinelMaster = "distlock"

// RedisSentinel is a Redis master, its replicas and three sentinels that
// watch them, all on loopback: what people run in production when one
// Redis must survive the loss of its machine.
type RedisSentinel struct {
	Master    *Process
	Replicas  []*Process
	Sentinels []*Process
}

// StartRedisSentinel starts a master, replicas replicas of it (each in
// sync before it returns) and three sentinels (redis-server --sentinel,
// with a generated config) that monitor it with a quorum of 2, each in a
// directory of its own under dir. The sentinels declare the master down
// after 500 ms of silence. It returns once every sentinel names the
// master; StartRedisSentinel does not wait for the sentinels to find each
// other (WaitAcquainted), which only a failover needs.
func StartRedisSentinel(dir string, replicas int) (s *RedisSentinel, err error) {
	s = &RedisSentinel{}
	started := s // s is nil by the time a failed start's defer runs
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	if s.Master, err = startRedis(filepath.Join(dir, "master"), "redis-server (master)", replicaSettings); err != nil {
		return nil, err
	}
	_, mport, _ := net.SplitHostPort(s.Master.Addr())
	for i := range replicas {
		r, err := startRedis(filepath.Join(dir, "replica"+strconv.Itoa(i)), "redis-server (replica)", func(port string) []string {
			return append(replicaSettings(port), "--replicaof", "127.0.0.1", mport)
		})
		if err != nil {
			return nil, err
		}
		s.Replicas = append(s.Replicas, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := waitReplicasOnline(ctx, s.Master.Addr(), replicas); err != nil {
		return nil, err
	}
	if err := waitReplicasAck(ctx, s.Master.Addr(), replicas); err != nil {
		return nil, err
	}
	for i := range 3 {
		p, err := startSentinel(filepath.Join(dir, "sentinel"+strconv.Itoa(i)), mport)
		if err != nil {
			return nil, err
		}
		s.Sentinels = append(s.Sentinels, p)
	}
	for _, p := range s.Sentinels {
		if err := waitSentinel(ctx, p.Addr(), func(m map[string]string) error {
			if m["ip"]+":"+m["port"] != s.Master.Addr() || m["num-slaves"] != strconv.Itoa(replicas) {
				return fmt.Errorf("sentinel sees master %s:%s with %s replicas", m["ip"], m["port"], m["num-slaves"])
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// replicaSettings make a replica's first sync immediate (the default
// diskless sync waits 5 s for more replicas to join).
func replicaSettings(string) []string {
	return []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
}

// SentinelAddrs are the sentinels' addresses, "host:port,host:port,...".
func (s *RedisSentinel) SentinelAddrs() string {
	var addrs []string
	for _, p := range s.Sentinels {
		addrs = append(addrs, p.Addr())
	}
	return strings.Join(addrs, ",")
}

// URL is the redis+sentinel:// URL of the deployment, with query (e.g.
// "?wait=1") appended.
func (s *RedisSentinel) URL(query string) string {
	return "redis+sentinel://" + s.SentinelAddrs() + "/" + SentinelMaster + query
}

// Nodes are the data nodes: the master first, then the replicas (as they
// were started; a failover changes their roles, not this list).
func (s *RedisSentinel) Nodes() []*Process {
	return append([]*Process{s.Master}, s.Replicas...)
}

// WaitAcquainted waits until every sentinel knows the other two, so that
// they can agree that the master is down and elect a leader for a
// failover (sentinels introduce themselves every 2 s).
func (s *RedisSentinel) WaitAcquainted(ctx context.Context) error {
	for _, p := range s.Sentinels {
		if err := waitSentinel(ctx, p.Addr(), func(m map[string]string) error {
			if n, _ := strconv.Atoi(m["num-other-sentinels"]); n < len(s.Sentinels)-1 {
				return fmt.Errorf("sentinel knows %d other sentinels", n)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// MasterAddr is the master's address as the first sentinel that answers
// names it.
func (s *RedisSentinel) MasterAddr(ctx context.Context) (string, error) {
	var last error
	for _, p := range s.Sentinels {
		c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), MaxRetries: -1})
		addr, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster).StringSlice()
		c.Close()
		if err == nil && len(addr) == 2 {
			return net.JoinHostPort(addr[0], addr[1]), nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel names the master: %v", last)
}

// Node is the data node at addr, or nil.
func (s *RedisSentinel) Node(addr string) *Process {
	for _, p := range s.Nodes() {
		if p.Addr() == addr {
			return p
		}
	}
	return nil
}

// WaitFailover waits until the sentinels name a master other than old
// and that master answers as a master with at least replicas replicas
// online. It returns the new master's address.
func (s *RedisSentinel) WaitFailover(ctx context.Context, old string, replicas int) (string, error) {
	for {
		addr, err := s.MasterAddr(ctx)
		if err == nil && addr != old {
			if err = waitReplicasOnline(ctx, addr, replicas); err == nil {
				return addr, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no failover away from %s: %v (%w)", old, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops every process of the deployment.
func (s *RedisSentinel) Close() error {
	var errs []error
	for _, p := range append(s.Sentinels, s.Nodes()...) {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}

// startSentinel starts redis-server --sentinel in dir, monitoring the
// master on 127.0.0.1:mport. The config file is the sentinel's own: it
// rewrites it as it learns the deployment.
func startSentinel(dir, mport string) (*Process, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	if dir, err = prepareDir(dir); err != nil {
		return nil, err
	}
	return startFresh(func() (spec, error) {
		ports, err := freePorts(1)
		if err != nil {
			return spec{}, err
		}
		port := strconv.Itoa(ports[0])
		addr := net.JoinHostPort("127.0.0.1", port)
		conf := filepath.Join(dir, "sentinel.conf")
		text := strings.Join([]string{
			"port " + port,
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + dir,
			"logfile \"\"",
			"sentinel monitor " + SentinelMaster + " 127.0.0.1 " + mport + " 2",
			"sentinel down-after-milliseconds " + SentinelMaster + " 500",
			"sentinel failover-timeout " + SentinelMaster + " 3000",
			"sentinel parallel-syncs " + SentinelMaster + " 4",
			"",
		}, "\n")
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return spec{}, err
		}
		return spec{
			name:    "redis-server --sentinel",
			bin:     bin,
			dir:     dir,
			args:    []string{conf, "--sentinel"},
			env:     os.Environ(),
			logPath: filepath.Join(dir, "sentinel.log"),
			addr:    addr,
			probe: func(ctx context.Context, pid int) error {
				return redisAnswers(ctx, addr, pid)
			},
		}, nil
	})
}

// waitSentinel polls SENTINEL MASTER on the sentinel at addr until ok
// accepts what it says of the master.
func waitSentinel(ctx context.Context, addr string, ok func(map[string]string) error) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var last error
	for {
		m, err := c.Do(ctx, "SENTINEL", "MASTER", SentinelMaster).Result()
		if err == nil {
			last = ok(fieldMap(m))
			if last == nil {
				return nil
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinel %s: %v (%w)", addr, last, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// fieldMap reads a flat name/value reply (a list, or a RESP3 map).
func fieldMap(v any) map[string]string {
	out := map[string]string{}
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any:
		for k, x := range v {
			out[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	}
	return out
}

// waitReplicasOnline waits until the master at addr says it is a master
// with at least n replicas online.
func waitReplicasOnline(ctx context.Context, addr string, n int) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var last error
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil {
			online := strings.Count(info, "state=online")
			if strings.Contains(info, "role:master") && online >= n {
				return nil
			}
			last = fmt.Errorf("%d of %d replicas online", online, n)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis %s: %v (%w)", addr, last, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitReplicasAck waits until n replicas acknowledge a write to the master
// at addr (WAIT): for up to about a second after their first sync, replicas
// reported online do not acknowledge yet.
func waitReplicasAck(ctx context.Context, addr string, n int) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	const probe = "distlock-harness:replicas-ack"
	defer c.Del(context.WithoutCancel(ctx), probe)
	var last error
	for {
		var wait *goredis.Cmd
		_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			p.Set(ctx, probe, "1", 0)
			wait = p.Do(ctx, "WAIT", n, 100)
			return nil
		})
		if err == nil {
			acked, _ := wait.Int64()
			if acked >= int64(n) {
				return nil
			}
			last = fmt.Errorf("%d of %d replicas acknowledged a write", acked, n)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis %s: %v (%w)", addr, last, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
