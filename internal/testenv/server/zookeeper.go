package server

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// StartZooKeeper starts a standalone ZooKeeper (Debian's jar on java) on a
// free loopback port, with its config in dir/zoo.cfg, its data in
// dir/zk.data and its log in dir/zookeeper.log (dir is created if needed),
// and waits until it serves. The admin server is off; the four-letter
// words are on (srvr, conf, mntr...). Transaction logs are not fsync'd: a
// killed server restarts with its data, only an OS crash could lose some.
// Restart keeps the data (sessions live on, by the server's clock). It
// returns an error wrapping ErrNoBinary when java or the jar is missing.
func StartZooKeeper(dir string) (*Process, error) { return startZooKeeper(dir, true, zkCnxnsLine(0)) }

// StartZooKeeperWithoutTTLNodes is StartZooKeeper with ZooKeeper's default
// zookeeper.extendedTypesEnabled=false: it refuses TTL nodes, as most
// deployed ensembles do.
func StartZooKeeperWithoutTTLNodes(dir string) (*Process, error) {
	return startZooKeeper(dir, false, zkCnxnsLine(0))
}

// cnxns is zoo.cfg's maxClientCnxns line, or "" for the server's default.
func startZooKeeper(dir string, extended bool, cnxns string) (*Process, error) {
	java, classpath, err := lookZooKeeper()
	if err != nil {
		return nil, err
	}
	dir, data, err := zookeeperDirs(dir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	return startFresh(1, nil, func(ports []int) (spec, error) {
		port := strconv.Itoa(ports[0])
		addr := net.JoinHostPort("127.0.0.1", port)
		if err := writeLines(cfgPath, zookeeperConfig(data, port, cnxns)); err != nil {
			return spec{}, err
		}
		return spec{
			name:    "zookeeper",
			bin:     java,
			dir:     dir,
			args:    zookeeperArgs(classpath, extended, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath),
			env:     zookeeperEnv(),
			logPath: filepath.Join(dir, "zookeeper.log"),
			addr:    addr,
			probe: func(ctx context.Context, _ int) error {
				return zookeeperServes(ctx, addr, data)
			},
		}, nil
	})
}

// zookeeperServes reports nil once the server on addr serves requests
// ("srvr" gives its mode) and keeps its data in data ("conf"), so it is
// ours, not another server on the port.
func zookeeperServes(ctx context.Context, addr, data string) error {
	srvr, err := FourLetterWord(ctx, addr, "srvr")
	if err != nil {
		return err
	}
	if !strings.Contains(srvr, "Mode: standalone") {
		return fmt.Errorf("srvr: %q", strings.TrimSpace(srvr))
	}
	conf, err := FourLetterWord(ctx, addr, "conf")
	if err != nil {
		return err
	}
	if !strings.Contains(conf, "dataDir="+filepath.Join(data, "version-2")+"\n") {
		return fmt.Errorf("the server on %s does not keep its data in %s", addr, data)
	}
	return nil
}
