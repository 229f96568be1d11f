package server

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
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
// directory of its own under dir. Two sentinels declare the master down
// after downAfter of silence; the third only votes (sentinelDownAfter).
// It returns once every sentinel names the master; StartRedisSentinel
// does not wait for the sentinels to find each other (WaitAcquainted),
// which only a failover needs.
func StartRedisSentinel(dir string, replicas int) (*RedisSentinel, error) {
	s := &RedisSentinel{}
	return startedOrClosed(s, s.start(dir, replicas))
}

// start starts the deployment into s.
func (s *RedisSentinel) start(dir string, replicas int) (err error) {
	if s.Master, err = startRedis(filepath.Join(dir, "master"), "redis-server (master)", replicaSettings); err != nil {
		return err
	}
	_, mport, _ := net.SplitHostPort(s.Master.Addr())
	for i := range replicas {
		r, err := startRedis(filepath.Join(dir, "replica"+strconv.Itoa(i)), "redis-server (replica)", func(port string) []string {
			return append(replicaSettings(port), "--replicaof", "127.0.0.1", mport)
		})
		if err != nil {
			return err
		}
		s.Replicas = append(s.Replicas, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := waitReplicasOnline(ctx, s.Master.Addr(), replicas); err != nil {
		return err
	}
	if err := waitReplicasAck(ctx, s.Master.Addr(), replicas); err != nil {
		return err
	}
	for i := range 3 {
		p, err := startSentinel(filepath.Join(dir, "sentinel"+strconv.Itoa(i)), mport, sentinelDownAfter[i])
		if err != nil {
			return err
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
			return err
		}
	}
	return nil
}

// sentinelDownAfter is each sentinel's down-after-milliseconds, so that a
// SIGKILLed master is replaced by one failover of about 2.5 s, on a loaded
// two-core machine too:
//
//   - 1 s, not less: when a sentinel switches to the promoted replica it
//     keeps the other sentinels' "master down" answers about the old
//     master and gives the new one down-after to answer a PING on a fresh
//     connection; with 500 ms a loaded machine missed that, and the
//     sentinels at once failed the new master over again (epochs 2, 3, 4
//     within 4 s, each demoting the master the clients had just found).
//   - The third sentinel never declares the master down, it only votes:
//     three sentinels that see the kill at the same instant can each vote
//     for themselves, and Sentinel then retries only after twice the
//     failover-timeout (an 8 s failover, longer than the scenarios' TTLs).
//     Two candidates and a voter that votes for the first to ask always
//     elect a leader.
var sentinelDownAfter = [3]string{"1000", "1000", "600000"}

// replicaSettings make a replica's first sync immediate (the default
// diskless sync waits 5 s for more replicas to join).
func replicaSettings(string) []string {
	return []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
}

// SentinelAddrs are the sentinels' addresses, "host:port,host:port,...".
func (s *RedisSentinel) SentinelAddrs() string { return addrList(s.Sentinels) }

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
		addr, err := sentinelNames(ctx, p.Addr())
		if err == nil {
			return addr, nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel names the master: %v", last)
}

// sentinelNames is the master's address as the sentinel at addr names it.
func sentinelNames(ctx context.Context, addr string) (string, error) {
	c := redisClient(addr)
	defer c.Close()
	hp, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster).StringSlice()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s names no master", addr)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// agreedMaster is the master's address if every sentinel names the same.
func (s *RedisSentinel) agreedMaster(ctx context.Context) (string, error) {
	var agreed string
	for _, p := range s.Sentinels {
		addr, err := sentinelNames(ctx, p.Addr())
		switch {
		case err != nil:
			return "", err
		case agreed == "":
			agreed = addr
		case addr != agreed:
			return "", fmt.Errorf("the sentinels name %s and %s", agreed, addr)
		}
	}
	return agreed, nil
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

// WaitFailover waits until every sentinel names one master other than
// old and that master answers as a master with at least replicas replicas
// online. It returns the new master's address. (Every sentinel: the others
// learn the new master from the leader within a moment, and a client that
// asks one of them in that moment still finds the old master.)
func (s *RedisSentinel) WaitFailover(ctx context.Context, old string, replicas int) (string, error) {
	var addr string
	err := pollUntil(ctx, 20*time.Millisecond, "no failover away from "+old, func() error {
		var err error
		if addr, err = s.agreedMaster(ctx); err != nil {
			return err
		}
		if addr == old {
			return fmt.Errorf("the sentinels still name %s", old)
		}
		return waitReplicasOnline(ctx, addr, replicas)
	})
	if err != nil {
		return "", err
	}
	return addr, nil
}

// Close stops every process of the deployment.
func (s *RedisSentinel) Close() error {
	return closeAll(append(append([]*Process(nil), s.Sentinels...), s.Nodes()...))
}

// startSentinel starts redis-server --sentinel in dir, monitoring the
// master on 127.0.0.1:mport and calling it down after downAfter ms of
// silence. The config file is the sentinel's own: it rewrites it as it
// learns the deployment.
func startSentinel(dir, mport, downAfter string) (*Process, error) {
	return startRedisServer(dir, "redis-server --sentinel", "sentinel.log", func(dir, port string) ([]string, error) {
		conf := filepath.Join(dir, "sentinel.conf")
		err := writeLines(conf, []string{
			"port " + port,
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + dir,
			"logfile \"\"",
			"sentinel monitor " + SentinelMaster + " 127.0.0.1 " + mport + " 2",
			"sentinel down-after-milliseconds " + SentinelMaster + " " + downAfter,
			"sentinel failover-timeout " + SentinelMaster + " 3000",
			"sentinel parallel-syncs " + SentinelMaster + " 4",
		})
		return []string{conf, "--sentinel"}, err
	})
}

// waitSentinel polls SENTINEL MASTER on the sentinel at addr until ok
// accepts what it says of the master.
func waitSentinel(ctx context.Context, addr string, ok func(map[string]string) error) error {
	c := redisClient(addr)
	defer c.Close()
	return pollUntil(ctx, 20*time.Millisecond, "sentinel "+addr, func() error {
		m, err := c.Do(ctx, "SENTINEL", "MASTER", SentinelMaster).Result()
		if err != nil {
			return err
		}
		return ok(fieldMap(m))
	})
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

// redisClient is a client of the server at addr that does not retry.
func redisClient(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
}
