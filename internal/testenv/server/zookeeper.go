package server

import (
	"context"
	"fmt"
	"io"
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
	data := filepath.Join(dir, "zk.data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	classpath := zookeeperJar
	if _, err := os.Stat(slf4jSimple); err == nil {
		classpath += ":" + slf4jSimple
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	return startFresh(func() (spec, error) {
		ports, err := freePorts(1)
		if err != nil {
			return spec{}, err
		}
		port := strconv.Itoa(ports[0])
		addr := net.JoinHostPort("127.0.0.1", port)
		cfg := strings.Join([]string{
			"tickTime=" + strconv.FormatInt(ZooKeeperTick.Milliseconds(), 10),
			"minSessionTimeout=" + strconv.FormatInt(2*ZooKeeperTick.Milliseconds(), 10),
			"maxSessionTimeout=600000",
			"dataDir=" + data,
			"clientPortAddress=127.0.0.1",
			"clientPort=" + port,
			cnxns,
			"admin.enableServer=false",
			"4lw.commands.whitelist=*",
			"forceSync=no",
			"preAllocSize=1024",
			"",
		}, "\n")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return spec{}, err
		}
		return spec{
			name: "zookeeper",
			bin:  java,
			dir:  dir,
			args: []string{
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
				"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath,
			},
			env:     zookeeperEnv(),
			logPath: filepath.Join(dir, "zookeeper.log"),
			addr:    addr,
			probe: func(ctx context.Context, _ int) error {
				return zookeeperServes(ctx, addr, data)
			},
		}, nil
	})
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

// FourLetterWord sends a ZooKeeper four-letter command ("srvr", "mntr",
// "cons"...) to addr and returns the whole answer.
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Second)
	}
	if err := c.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(c, 1<<20))
	return string(b), err
}
