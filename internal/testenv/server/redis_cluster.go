package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RedisCluster is a Redis Cluster of masters (no replicas) on loopback.
type RedisCluster struct {
	Nodes []*Process
}

// clusterSlots is the number of hash slots of every Redis Cluster.
const clusterSlots = 16384

// StartRedisCluster starts n redis-servers with cluster-enabled, each in
// a directory of its own under dir, gives each an equal share of the hash
// slots (CLUSTER ADDSLOTSRANGE), introduces them (CLUSTER MEET), and
// returns once every node says the cluster is ok and knows every node and
// slot. (redis-cli --cluster create does the same, and needs redis-tools.)
func StartRedisCluster(dir string, n int) (*RedisCluster, error) {
	c := &RedisCluster{}
	return startedOrClosed(c, c.start(dir, n))
}

// start starts the nodes into c.Nodes and makes them one cluster.
func (c *RedisCluster) start(dir string, n int) error {
	for i := range n {
		p, err := startRedis(filepath.Join(dir, "node"+strconv.Itoa(i)), "redis-server (cluster)", func(string) []string {
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", "2000",
			}
		})
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for i, p := range c.Nodes {
		first, last := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := nodeDo(ctx, p.Addr(), "CLUSTER", "ADDSLOTSRANGE", first, last); err != nil {
			return err
		}
	}
	// Every node meets every other: quicker than waiting for gossip.
	for i, p := range c.Nodes {
		for _, q := range c.Nodes[i+1:] {
			host, port, _ := strings.Cut(q.Addr(), ":")
			if err := nodeDo(ctx, p.Addr(), "CLUSTER", "MEET", host, port); err != nil {
				return err
			}
		}
	}
	for _, p := range c.Nodes {
		if err := waitClusterOK(ctx, p.Addr(), n); err != nil {
			return err
		}
	}
	return nil
}

// Addrs are the nodes' addresses, "host:port,host:port,...".
func (c *RedisCluster) Addrs() string { return addrList(c.Nodes) }

// URL is the redis+cluster:// URL of the cluster.
func (c *RedisCluster) URL() string { return "redis+cluster://" + c.Addrs() }

// Close stops every node.
func (c *RedisCluster) Close() error { return closeAll(c.Nodes) }

func nodeDo(ctx context.Context, addr string, args ...any) error {
	c := redisClient(addr)
	defer c.Close()
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redis %s: %v: %w", addr, args, err)
	}
	return nil
}

// waitClusterOK waits until the node at addr says the cluster is ok, with
// n nodes known and every slot assigned.
func waitClusterOK(ctx context.Context, addr string, n int) error {
	c := redisClient(addr)
	defer c.Close()
	return pollUntil(ctx, 20*time.Millisecond, "redis cluster node "+addr, func() error {
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		m := parseColonLines(info)
		if m["cluster_state"] == "ok" && m["cluster_known_nodes"] == strconv.Itoa(n) && m["cluster_slots_assigned"] == strconv.Itoa(clusterSlots) {
			return nil
		}
		return fmt.Errorf("cluster_state %s, %s nodes known, %s slots assigned", m["cluster_state"], m["cluster_known_nodes"], m["cluster_slots_assigned"])
	})
}

// parseColonLines reads "field:value" lines (INFO, CLUSTER INFO).
func parseColonLines(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}
