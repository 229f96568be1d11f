package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// How a ZooKeeper server is run, for a standalone one (zookeeper.go) and an
// ensemble's (zookeeper_ensemble.go): the jars, the JVM, zoo.cfg.

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
	return envWithout("JAVA_TOOL_OPTIONS=", "JDK_JAVA_OPTIONS=", "_JAVA_OPTIONS=")
}
