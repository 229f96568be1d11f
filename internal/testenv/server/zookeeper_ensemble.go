package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// ZooKeeperEnsemble is n ZooKeeper servers of one ensemble on loopback,
// each its own Process (Stop, Kill, Restart with its data work per server).
type ZooKeeperEnsemble struct {
	Servers []*Process
}

// StartZooKeeperEnsemble starts n servers (QuorumPeerMain), each with its
// config, myid and data in dir/zk<i>, TTL nodes enabled as StartZooKeeper
// does, and returns once every server serves as leader or follower. It does
// not retry on other ports.
func StartZooKeeperEnsemble(dir string, n int) (*ZooKeeperEnsemble, error) {
	java, classpath, err := lookZooKeeper()
	if err != nil {
		return nil, err
	}
	if dir, err = prepareDir(dir); err != nil {
		return nil, err
	}
	servers, err := startGroup(n, 3, 3*startTimeout, func(i int, ports []int) (spec, error) {
		var peers []string
		for j := range n {
			peers = append(peers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", j+1, ports[3*j+1], ports[3*j+2]))
		}
		return zookeeperPeerSpec(java, classpath, filepath.Join(dir, "zk"+strconv.Itoa(i)), i+1, ports[3*i], peers)
	}) // they serve only once a quorum runs
	if err != nil {
		return nil, err
	}
	return &ZooKeeperEnsemble{Servers: servers}, nil
}

// zookeeperPeerSpec runs server id of an ensemble (peers: its
// server.<id> lines) in dir, serving clients on clientPort.
func zookeeperPeerSpec(java, classpath, dir string, id, clientPort int, peers []string) (spec, error) {
	dir, data, err := zookeeperDirs(dir)
	if err != nil {
		return spec{}, err
	}
	if err := writeLines(filepath.Join(data, "myid"), []string{strconv.Itoa(id)}); err != nil {
		return spec{}, err
	}
	port := strconv.Itoa(clientPort)
	addr := net.JoinHostPort("127.0.0.1", port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := writeLines(cfgPath, append(zookeeperConfig(data, port, "initLimit=50", "syncLimit=20", "maxClientCnxns=0"), peers...)); err != nil {
		return spec{}, err
	}
	return spec{
		name:    "zookeeper server " + strconv.Itoa(id),
		bin:     java,
		dir:     dir,
		args:    zookeeperArgs(classpath, true, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath),
		env:     zookeeperEnv(),
		logPath: filepath.Join(dir, "zookeeper.log"),
		addr:    addr,
		probe: func(ctx context.Context, _ int) error {
			srvr, err := FourLetterWord(ctx, addr, "srvr")
			if err != nil {
				return err
			}
			if !strings.Contains(srvr, "Mode: leader") && !strings.Contains(srvr, "Mode: follower") {
				return fmt.Errorf("srvr: %q", strings.TrimSpace(srvr))
			}
			return nil
		},
	}, nil
}

// Addrs is the servers' client addresses, comma-separated.
func (e *ZooKeeperEnsemble) Addrs() string { return addrList(e.Servers) }

// URL is the zk:// backend URL naming every server.
func (e *ZooKeeperEnsemble) URL() string { return "zk://" + e.Addrs() }

// Processes is every server.
func (e *ZooKeeperEnsemble) Processes() []*Process { return e.Servers }

// Leader is the server whose srvr says it leads.
func (e *ZooKeeperEnsemble) Leader(ctx context.Context) (*Process, error) {
	for _, p := range e.Servers {
		if srvr, err := FourLetterWord(ctx, p.Addr(), "srvr"); err == nil && strings.Contains(srvr, "Mode: leader") {
			return p, nil
		}
	}
	return nil, errors.New("no zookeeper server says it leads")
}

// Close stops every server.
func (e *ZooKeeperEnsemble) Close() error { return closeAll(e.Servers) }
