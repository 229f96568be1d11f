package main

import (
	"slices"
	"strings"
)

var (
	faultNames = []string{"none", "pause-server", "partition-client", "restart-server", "wipe-server", "kill-holder", "stop-holder", "kill-leader", "failover", "clock-jump"}
	modeNames  = []string{"mutex", "semaphore", "handle"}
)

// property names, as the checker reports them.
const (
	propOverlap    = "overlaps"
	propToken      = "token_regressions"
	propStale      = "stale_writes_accepted"
	propStuck      = "stuck"
	propNoProgress = "no_progress"
)

// expectation says which properties a row may violate and why: only
// where the engine's documented guarantee (docs/GUARANTEES.md) does not
// cover the fault. Everything else must come out 0.
type expectation struct {
	allowed []string
	reason  string
}

func (x expectation) String() string {
	if len(x.allowed) == 0 {
		return "safe"
	}
	return "unsafe: " + x.reason + " (may violate: " + strings.Join(x.allowed, ", ") + ")"
}

func (x expectation) allows(prop string) bool { return slices.Contains(x.allowed, prop) }

var singleNode = []string{"redis", "redis-sentinel", "redis-sentinel-wait1", "etcd", "zookeeper", "consul", "postgres", "mariadb"}

// expect is the documented expectation for a row.
func expect(engine, fault, mode string) expectation {
	switch {
	case mode == "handle" && slices.Contains([]string{"pause-server", "partition-client", "restart-server", "kill-leader", "stop-holder"}, fault):
		return expectation{[]string{propOverlap}, "a handle's lock is not renewed and nothing stops the process using it: a step still running when the lease lapses (its extend blocked by the outage: a paused, cut off, restarting or re-electing server) overlaps the next holder (distlock acquire --help); the fenced register must still reject its writes"}
	case fault == "restart-server" && engine == "consul":
		return expectation{[]string{propOverlap}, "a Consul dev agent keeps its data in memory: a restart empties it, as wipe-server does (below); tokens must still rise"}
	case fault == "wipe-server" && slices.Contains(singleNode, engine):
		return expectation{[]string{propOverlap}, "a server that loses its data frees the lock at once; the holder learns it only at its next renewal (ttl/3) and stops its command then (GUARANTEES.md Known limits, Redis restarted empty); tokens must still rise"}
	case fault == "failover" && engine == "redis-sentinel":
		return expectation{[]string{propOverlap, propToken, propStale}, "Sentinel without wait= fails over to an asynchronous replica that may not have the lock (GUARANTEES.md Known limits, Redis replication)"}
	case fault == "clock-jump":
		return expectation{[]string{propOverlap}, "the server judges lease expiry by its own wall clock, and a jump forward of 3 TTLs is far beyond the 1% drift allowance: the lease expires early (DESIGN.md 1, Timing); tokens must still rise"}
	case fault == "stop-holder" && engine != "file":
		return expectation{[]string{propOverlap}, "a SIGSTOPped distlock cannot stop its command past its lease (GUARANTEES.md Known limits, SIGSTOP of distlock itself); the fenced register must still reject the stale holder's writes"}
	}
	return expectation{}
}

// skipReason says why a row is not run, or "" to run it.
func skipReason(engine, fault, mode string) string {
	switch {
	case mode == "semaphore" && engine == "redlock":
		return "Redlock refuses --limit (documented)"
	case fault == "clock-jump" && strings.HasPrefix(engine, "redis") || fault == "clock-jump" && engine == "redlock":
		return "clock-jump: libfaketime and redis-server's jemalloc clash at start (\"Unexpected recursive calls to clock_gettime()\", the server never answers)"
	case fault == "clock-jump" && !slices.Contains([]string{"postgres", "mariadb"}, engine):
		return "clock-jump fakes a C server's clock with libfaketime: etcd and Consul are Go binaries (no libc clock), ZooKeeper's sessions run on the JVM's monotonic clock, the file engine has no server"
	case fault == "kill-leader" && engine != "etcd3" && engine != "zookeeper3" && engine != "consul3":
		return "kill-leader runs on etcd3, zookeeper3 and consul3 (three members each); the other engines have no leader"
	case fault == "failover" && !strings.HasPrefix(engine, "redis-sentinel"):
		return "failover applies to Redis Sentinel (the cluster has no replicas; etcd3, zookeeper3 and consul3 have kill-leader)"
	case (engine == "etcd3" || engine == "zookeeper3" || engine == "consul3") && (fault == "wipe-server" || fault == "partition-client"):
		return "not built for three-member engines (wiping a member needs it to rejoin empty; partition needs a proxy per member and contender)"
	case engine == "file" && fault != "none" && fault != "kill-holder" && fault != "stop-holder":
		return "the file engine has no server or network"
	case fault == "partition-client" && !slices.Contains([]string{"redis", "etcd", "zookeeper", "consul", "postgres", "mariadb"}, engine):
		return "partition-client needs one proxied address per contender; multi-address URLs (sentinel, cluster, redlock) are not proxied yet"
	case fault == "wipe-server" && (engine == "postgres" || engine == "mariadb"):
		return "wiping a database's data is not built (it needs a fresh initdb of the private data directory)"
	case (fault == "wipe-server" || fault == "restart-server") && engine == "redis-cluster":
		return "restarting a cluster node is not built"
	}
	return ""
}
