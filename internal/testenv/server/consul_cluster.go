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
)

// ConsulCluster is n Consul servers of one datacenter on loopback
// (-server -bootstrap-expect n), each its own Process: Stop, Kill and
// Restart (with its data directory) work per server.
type ConsulCluster struct {
	Servers []*Process
}

// StartConsulCluster starts n Consul servers, each with its data in
// dir/server<i>, joined to each other over Serf, and returns once every
// one of them knows the elected leader. A server that exits before it
// answers most likely lost a race for one of its ports: the whole cluster
// is started again on other ports, a few times.
func StartConsulCluster(dir string, n int) (*ConsulCluster, error) {
	bin, err := consulBinary()
	if err != nil {
		return nil, err
	}
	if dir, err = prepareDir(dir); err != nil {
		return nil, err
	}
	for range 3 {
		var ps []*Process
		ps, err = startConsulServers(bin, dir, n)
		if err == nil {
			return &ConsulCluster{Servers: ps}, nil
		}
		if !errors.Is(err, errExited) {
			break
		}
		for i := range n { // a fresh start: no data of the failed one
			_ = os.RemoveAll(filepath.Join(dir, "server"+strconv.Itoa(i), "data"))
		}
	}
	return nil, err
}

// startConsulServers launches n servers on newly chosen free ports and
// waits until each knows the leader (elected only once all n joined). A
// join that found its peer not listening yet is retried after a second,
// not Consul's 30 s; and the wait is the ZooKeeper ensemble's, three
// starts' worth: under the full matrix's load a server once had no leader
// 20 s after its start (CI, consul3).
func startConsulServers(bin, dir string, n int) ([]*Process, error) {
	return startGroup(n, 3, 3*startTimeout, func(i int, ports []int) (spec, error) {
		var join []string
		for j := range n {
			join = append(join, "-retry-join", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*j+1])))
		}
		sdir, err := prepareDir(filepath.Join(dir, "server"+strconv.Itoa(i)))
		if err != nil {
			return spec{}, err
		}
		extra := append([]string{"-server", "-bootstrap-expect", strconv.Itoa(n), "-data-dir", filepath.Join(sdir, "data"), "-retry-interval", "1s"}, join...)
		return consulSpec(bin, sdir, "consul server "+strconv.Itoa(i), ports[3*i:3*i+3], extra), nil
	})
}

// Addrs is every server's HTTP address, comma-separated, as a consul://
// URL lists them.
func (c *ConsulCluster) Addrs() string { return addrList(c.Servers) }

// URL is the consul:// backend URL naming every server.
func (c *ConsulCluster) URL() string { return "consul://" + c.Addrs() }

// Processes is every server.
func (c *ConsulCluster) Processes() []*Process { return c.Servers }

// Leader returns the server that is the Raft leader now, as a running
// server reports it.
func (c *ConsulCluster) Leader(ctx context.Context) (*Process, error) {
	for _, p := range c.Servers {
		var leader string // the leader's server RPC address
		if err := consulGet(ctx, p.Addr(), "/v1/status/leader", &leader); err != nil || leader == "" {
			continue
		}
		for _, q := range c.Servers {
			if strings.HasSuffix(leader, ":"+q.spec.args[serverPortArg(q.spec.args)]) {
				return q, nil
			}
		}
	}
	return nil, fmt.Errorf("no consul server names a leader")
}

// serverPortArg is the index in args of the -server-port value.
func serverPortArg(args []string) int {
	for i, a := range args {
		if a == "-server-port" {
			return i + 1
		}
	}
	return 0
}

// Close kills every server.
func (c *ConsulCluster) Close() error { return closeAll(c.Servers) }
