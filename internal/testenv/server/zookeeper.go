package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// zookeeperJar is where Debian's libzookeeper-java puts the server; its
// manifest's Class-Path names the jars it needs.
const zookeeperJar = "/usr/share/java/zookeeper.jar"

// slf4jSimple, when present, gives ZooKeeper a logger (to its log file);
// without it ZooKeeper logs nothing.
const slf4jSimple = "/usr/share/java/slf4j-simple.jar"

// ZooKeeperTick is the test server's tickTime. Sessions may last from two
// ticks to ten minutes, so that a 1–3 s session timeout (distlock's --ttl)
// is granted as asked; the server expires a session at most one tick after
// its timeout.
const ZooKeeperTick = 100 * time.Millisecond

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

// lookZooKeeper finds java and Debian's ZooKeeper jar, and returns the
// classpath: the jar, and slf4jSimple when present.
func lookZooKeeper() (java, classpath string, err error) {
	if java, err = lookBinary("java"); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(zookeeperJar); err != nil {
		return "", "", fmt.Errorf("%w: %s", ErrNoBinary, zookeeperJar)
	}
	classpath = zookeeperJar
	if _, err := os.Stat(slf4jSimple); err == nil {
		classpath += ":" + slf4jSimple
	}
	return java, classpath, nil
}

// zookeeperDirs prepares dir and its data directory dir/zk.data.
func zookeeperDirs(dir string) (abs, data string, err error) {
	if abs, err = prepareDir(dir); err != nil {
		return "", "", err
	}
	data = filepath.Join(abs, "zk.data")
	return abs, data, os.MkdirAll(data, 0o755)
}

// zookeeperConfig is zoo.cfg for a server with its data in data, serving
// clients on 127.0.0.1:port, with extra lines (maxClientCnxns, an
// ensemble's limits and peers) after the client port.
func zookeeperConfig(data, port string, extra ...string) []string {
	cfg := []string{
		"tickTime=" + strconv.FormatInt(ZooKeeperTick.Milliseconds(), 10),
		"minSessionTimeout=" + strconv.FormatInt(2*ZooKeeperTick.Milliseconds(), 10),
		"maxSessionTimeout=600000",
		"dataDir=" + data,
		"clientPortAddress=127.0.0.1",
		"clientPort=" + port,
	}
	return append(append(cfg, extra...),
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"forceSync=no",
		"preAllocSize=1024",
	)
}

// writeLines writes lines to path, each ended by a newline.
func writeLines(path string, lines []string) error {
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// zookeeperArgs are java's arguments to run main (a ZooKeeper server class)
// with the config cfgPath.
func zookeeperArgs(classpath string, extended bool, main, cfgPath string) []string {
	return []string{
		// A small, quick JVM: the server starts in about a second.
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Xms32m", "-Xmx256m", "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		// TTL nodes (distlock's holds), and a container check every
		// 100ms instead of every minute, so that expired holds and
		// empty key nodes go quickly.
		"-Dzookeeper.extendedTypesEnabled=" + strconv.FormatBool(extended),
		"-Dznode.container.checkIntervalMs=100",
		"-cp", classpath,
		main, cfgPath,
	}
}

// zookeeperEnv is the test's environment without the variables the JVM
// reads its options from.
func zookeeperEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JAVA_TOOL_OPTIONS=") && !strings.HasPrefix(kv, "JDK_JAVA_OPTIONS=") && !strings.HasPrefix(kv, "_JAVA_OPTIONS=") {
			env = append(env, kv)
		}
	}
	return env
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
