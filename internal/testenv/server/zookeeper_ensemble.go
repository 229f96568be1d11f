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

// ZooKeeperEnsemble is n ZooKeeper servers of one ensemble on loopback,
// each its own Process (Stop, Kill, Restart with its data work per server).
type ZooKeeperEnsemble struct {
	Servers []*Process
}

// StartZooKeeperEnsemble starts n servers (QuorumPeerMain), each with its
// config, myid and data in dir/zk<i>, TTL nodes enabled as StartZooKeeper
// does, and returns once every server serves as leader or follower. It does
// not retry on other ports.
func StartZooKeeperEnsemble(dir string, n int) (e *ZooKeeperEnsemble, err error) {
	java, err := lookBinary("java")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(zookeeperJar); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoBinary, zookeeperJar)
	}
	if dir, err = prepareDir(dir); err != nil {
		return nil, err
	}
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	var peers []string
	for i := range n {
		peers = append(peers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[3*i+1], ports[3*i+2]))
	}
	e = &ZooKeeperEnsemble{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	for i := range n {
		s, err := zookeeperPeerSpec(java, filepath.Join(dir, "zk"+strconv.Itoa(i)), i+1, ports[3*i], peers)
		if err != nil {
			return nil, err
		}
		p := &Process{spec: s}
		p.mu.Lock()
		err = p.launchLocked()
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
		e.Servers = append(e.Servers, p)
	}
	for _, p := range e.Servers { // they serve only once a quorum runs
		ctx, cancel := context.WithTimeout(context.Background(), 3*startTimeout)
		err := waitReady(ctx, p.spec, p.pid, p.done)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

func zookeeperPeerSpec(java, dir string, id, clientPort int, peers []string) (spec, error) {
	dir, err := prepareDir(dir)
	if err != nil {
		return spec{}, err
	}
	data := filepath.Join(dir, "zk.data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return spec{}, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return spec{}, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))
	cfg := append([]string{
		"tickTime=" + strconv.FormatInt(ZooKeeperTick.Milliseconds(), 10),
		"initLimit=50", "syncLimit=20",
		"minSessionTimeout=" + strconv.FormatInt(2*ZooKeeperTick.Milliseconds(), 10),
		"maxSessionTimeout=600000",
		"dataDir=" + data,
		"clientPortAddress=127.0.0.1",
		"clientPort=" + strconv.Itoa(clientPort),
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"forceSync=no",
		"preAllocSize=1024",
	}, peers...)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		return spec{}, err
	}
	classpath := zookeeperJar
	if _, err := os.Stat(slf4jSimple); err == nil {
		classpath += ":" + slf4jSimple
	}
	return spec{
		name: "zookeeper server " + strconv.Itoa(id),
		bin:  java,
		dir:  dir,
		args: []string{
			"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
			"-Xms32m", "-Xmx256m", "-Djava.awt.headless=true",
			"-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dzookeeper.extendedTypesEnabled=true",
			"-Dznode.container.checkIntervalMs=100",
			"-cp", classpath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
		},
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
func (e *ZooKeeperEnsemble) Addrs() string {
	var addrs []string
	for _, p := range e.Servers {
		addrs = append(addrs, p.Addr())
	}
	return strings.Join(addrs, ",")
}

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
func (e *ZooKeeperEnsemble) Close() error {
	var errs []error
	for _, p := range e.Servers {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
