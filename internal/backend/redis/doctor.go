package redis

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor: how this Redis is deployed, whether it
// may evict lock keys, what a restart or a failover does to the locks,
// whether our user may run what distlock runs, and its clock.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	rctx := req.RequestContexts(ctx, 5*time.Second)
	var checks []lock.Check
	for _, p := range probes {
		checks = append(checks, b.probe(rctx, p))
	}
	checks = append(checks, b.aclCheck(rctx, req.Key), lock.ServerClockCheck(rctx, req.TTL, "TIME", 0, serverTime(b.c)))
	if b.nodeOptions != nil {
		checks = append(checks, b.replicaClockCheck(rctx, req.TTL))
	}
	return checks
}

type reqCtx = lock.RequestContext

// source is what a probe reads: an INFO section or CONFIG GET settings.
type source struct {
	info   string
	config []string
}

// probe is a check judged from what the server reports: need must be
// readable, also is merged in when it is; what names need, and fix says
// what to do when it cannot be read.
type probe struct {
	name       string
	need, also source
	what, fix  string
	verdict    func(b *Backend, m map[string]string) lock.Check
}

var probes = []probe{
	{name: "deployment", need: source{info: "server"}, also: source{info: "cluster"}, what: "INFO server",
		fix:     "make sure --backend names a standalone Redis primary, not a Sentinel or a Cluster node",
		verdict: func(b *Backend, m map[string]string) lock.Check { return deploymentVerdict(b.topo, m, b.addr) }},
	{name: "maxmemory-policy", need: source{config: []string{"maxmemory-policy", "maxmemory"}}, what: "maxmemory-policy (CONFIG GET)",
		fix: "check it in the server's configuration or your provider's settings: it must be noeviction, or every lock can be evicted when memory is full",
		verdict: func(_ *Backend, m map[string]string) lock.Check {
			return evictionVerdict(m["maxmemory-policy"], m["maxmemory"])
		}},
	{name: "persistence", need: source{config: []string{"appendonly", "appendfsync", "save"}}, what: "appendonly and save (CONFIG GET)",
		fix: "find out what a restart of this Redis keeps (see the README's \"Doctor\" section for what it means for locks)",
		verdict: func(b *Backend, m map[string]string) lock.Check {
			if b.redlock {
				return redlockPersistenceVerdict(m["appendonly"], m["appendfsync"], m["save"])
			}
			return persistenceVerdict(m["appendonly"], m["appendfsync"], m["save"])
		}},
	{name: "replication", need: source{info: "replication"}, also: source{config: []string{"min-replicas-to-write"}}, what: "INFO replication",
		fix: "find out whether this Redis has replicas: a failover to an async replica can grant a lock twice",
		verdict: func(_ *Backend, m map[string]string) lock.Check {
			return replicationVerdict(m, m["min-replicas-to-write"])
		}},
}

// probe reads p's sources and judges them.
func (b *Backend) probe(rctx reqCtx, p probe) lock.Check {
	m, err := b.read(rctx, p.need)
	if err != nil {
		return lock.CannotCheck(p.name, "read "+p.what, err, p.fix)
	}
	if also, err := b.read(rctx, p.also); err == nil {
		maps.Copy(m, also)
	}
	return p.verdict(b, m)
}

// read reads an INFO section or CONFIG GET of each setting (neither: an
// empty map).
func (b *Backend) read(rctx reqCtx, s source) (map[string]string, error) {
	ctx, cancel := rctx()
	defer cancel()
	out := map[string]string{}
	if s.info != "" {
		txt, err := b.c.Info(ctx, s.info).Result()
		if err != nil {
			return nil, err
		}
		out = parseInfo(txt)
	}
	for _, n := range s.config {
		m, err := b.c.ConfigGet(ctx, n).Result()
		if err != nil {
			return nil, err
		}
		v, ok := m[n]
		if !ok {
			return nil, fmt.Errorf("CONFIG GET %s: no such setting", n)
		}
		out[n] = v
	}
	return out, nil
}

// parseInfo reads INFO's "field:value" lines; '#' lines are section titles.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// deploymentVerdict judges INFO server and INFO cluster (info holds
// both): a node must be what the URL says it is.
func deploymentVerdict(topo Topology, info map[string]string, addr string) lock.Check {
	version, mode := info["redis_version"], cmp.Or(info["redis_mode"], "standalone")
	isCluster := mode == "cluster" || info["cluster_enabled"] == "1"
	return lock.FirstCase("deployment", []lock.Case{
		{When: topo == Cluster && isCluster, Detail: "Redis Cluster " + version},
		{When: topo == Cluster, Status: lock.CheckProblem, Detail: fmt.Sprintf("%s is not a Redis Cluster (redis_mode %s)", addr, info["redis_mode"]),
			Fix: "use redis:// for a standalone Redis, redis+cluster:// only for a cluster's nodes"},
		{When: topo == Sentinel && isCluster, Status: lock.CheckProblem, Detail: fmt.Sprintf("the master of %s is a Redis Cluster node", addr),
			Fix: "use redis+cluster:// with the cluster's nodes"},
		{When: topo == Sentinel, Detail: fmt.Sprintf("Redis %s master found through Sentinel", version)},
		{When: mode == "sentinel", Status: lock.CheckProblem,
			Detail: fmt.Sprintf("%s is a Redis Sentinel %s, reached through a plain redis:// URL: Sentinel watches Redis servers, it holds no locks", addr, version),
			Fix:    "point --backend at the current primary (SENTINEL get-master-addr-by-name NAME names it); a plain URL does not follow a failover"},
		{When: isCluster, Status: lock.CheckProblem,
			Detail: fmt.Sprintf("%s is a node of a Redis Cluster (%s), reached through a plain redis:// URL: distlock talks to this node only, and a key whose slot another node serves fails with MOVED", addr, version),
			Fix:    "keep distlock's locks on a standalone Redis (with replicas if you like), or on etcd"},
	}, lock.Case{Detail: fmt.Sprintf("%s Redis %s", mode, version)})
}

// evictionVerdict judges maxmemory-policy and maxmemory. Every lock hash
// has a TTL (it is the lease), so the volatile-* policies evict exactly
// those; allkeys-* evicts them and the token counters too.
func evictionVerdict(policy, maxmemory string) lock.Check {
	fix := "CONFIG SET maxmemory-policy noeviction, and keep it in redis.conf (or your provider's parameter group): a full Redis then refuses new locks (exit 69) instead of dropping held ones"
	why := "evicts any key when memory is full: a held lock's hash can vanish and another process take the lock while its holder still runs (the fencing-token counters can vanish too)"
	volatile := strings.HasPrefix(policy, "volatile-")
	if volatile {
		why = "evicts keys that have a TTL when memory is full, and every distlock lock hash has one (the lease): a held lock can vanish and another process take it while its holder still runs"
	}
	evicts := volatile || strings.HasPrefix(policy, "allkeys-")
	return lock.FirstCase("maxmemory-policy", []lock.Case{
		{When: !evicts && policy != "noeviction", Status: lock.CheckWarning, Detail: fmt.Sprintf("%s: a policy distlock does not know", policy), Fix: fix},
		{When: evicts && maxmemory == "0", Status: lock.CheckWarning, Fix: fix + "; do it before anyone sets maxmemory",
			Detail: fmt.Sprintf("%s %s, but maxmemory is 0 (no limit), so nothing is evicted today", policy, why)},
		{When: evicts, Status: lock.CheckProblem, Detail: fmt.Sprintf("%s (maxmemory %s) %s", policy, maxmemory, why), Fix: fix},
	}, lock.Case{Detail: "noeviction: when memory is full Redis refuses writes (distlock exits 69) and never drops a held lock"})
}

// redlockPersistenceVerdict says what a restart of one Redlock master
// does to the locks. Redlock needs a master that restarts either with
// every lock it granted (appendfsync always) or with none: an empty
// master is noticed (its boot marker is gone) and kept out of quorums
// until the leases it may have lost have run out (redlock.go, "delayed
// restart"). A master that comes back with part of its data (the last
// second lost by appendfsync everysec, or an older snapshot) keeps its
// marker, counts at once and can grant a lock it had granted to another.
func redlockPersistenceVerdict(appendonly, appendfsync, save string) lock.Check {
	fix := "set appendonly yes and appendfsync always on every Redlock master (a restart then keeps every lock), or turn persistence off (appendonly no, save \"\") so that distlock notices an empty restart and waits it out"
	return lock.FirstCase("persistence", []lock.Case{
		{When: appendonly == "yes" && appendfsync == "always",
			Detail: "append-only file with appendfsync always: a restart keeps every lock this Redlock master granted, and it counts toward a quorum at once"},
		{When: appendonly == "yes", Status: lock.CheckProblem, Fix: fix,
			Detail: fmt.Sprintf("append-only file with appendfsync %s: a crash loses the last writes but not distlock's boot marker, so after a restart this Redlock master counts toward a quorum at once while missing locks it granted just before: a lock can be granted twice", appendfsync)},
		{When: strings.TrimSpace(save) != "", Status: lock.CheckProblem, Fix: fix,
			Detail: fmt.Sprintf("snapshots only (save %q): a restart restores an older snapshot with distlock's boot marker but without the locks granted since, so this Redlock master counts toward a quorum at once and can grant a lock twice", save)},
	}, lock.Case{Status: lock.CheckWarning, Fix: "for restarts that keep the locks and need no wait, set appendonly yes and appendfsync always",
		Detail: "no persistence (appendonly no, save \"\"): a restart empties this Redlock master; distlock notices (its boot marker is gone) and does not count it toward a quorum until the longest lease live on the other masters has run out (the delayed restart), so with another master down no lock can be taken meanwhile"})
}

// persistenceVerdict says what a restart does to the locks. Tokens are
// at least the server's TIME in µs, so they keep rising whatever is lost.
func persistenceVerdict(appendonly, appendfsync, save string) lock.Check {
	const tokens = "fencing tokens keep rising across a restart (each is at least the server's TIME in µs)"
	aof := fmt.Sprintf("append-only file on (appendfsync %s): a restart restores the held locks with their expiry times; %s", appendfsync, tokens)
	lost := ": a held lock is lost, its holder finds out at its next renewal (within ttl/3) and stops its command, but another process can take the lock in that gap; " + tokens
	fix := "keep Redis down for longer than --ttl when restarting it (every holder then stops first), or turn on appendonly yes with appendfsync always; a store that checks DISTLOCK_TOKEN rejects the old holder's writes"
	return lock.FirstCase("persistence", []lock.Case{
		{When: appendonly == "yes" && appendfsync == "always", Detail: aof},
		{When: appendonly == "yes", Detail: aof + "; a crash can lose the last second or so of writes, so a lock taken or renewed just before it can be lost"},
		{When: strings.TrimSpace(save) != "", Status: lock.CheckWarning, Fix: fix,
			Detail: fmt.Sprintf("snapshots only (save %q): a restart restores the last snapshot, without the locks taken since", save) + lost},
	}, lock.Case{Status: lock.CheckWarning, Fix: fix, Detail: "no persistence (appendonly no, save \"\"): a restart empties Redis" + lost})
}

// replicationVerdict judges INFO replication and min-replicas-to-write
// ("" when unreadable).
func replicationVerdict(repl map[string]string, minReplicas string) lock.Check {
	n, _ := strconv.Atoi(repl["connected_slaves"])
	m, _ := strconv.Atoi(minReplicas)
	async := fmt.Sprintf("a primary with %d replica(s), replicated asynchronously", n)
	return lock.FirstCase("replication", []lock.Case{
		{When: repl["role"] == "slave", Status: lock.CheckProblem, Fix: "point --backend at the primary",
			Detail: fmt.Sprintf("this is a replica of %s:%s: it refuses distlock's writes (READONLY), or, if it takes them, its locks are not the primary's", repl["master_host"], repl["master_port"])},
		{When: repl["role"] != "master", Status: lock.CheckWarning, Detail: fmt.Sprintf("INFO replication reports role %q", repl["role"]),
			Fix: "find out whether this Redis has replicas: a failover to an async replica can grant a lock twice"},
		{When: n == 0, Detail: "a primary with no replicas: a lock is exclusive while this server lives"},
		{When: m > 0, Detail: async + fmt.Sprintf("; min-replicas-to-write %d refuses writes when too few replicas are in sync, which narrows (does not close) the window in which a failover loses a fresh lock", m)},
	}, lock.Case{Status: lock.CheckWarning, Fix: "set min-replicas-to-write 1 and min-replicas-max-lag 10 to narrow the window; for locks that survive a failover, use etcd",
		Detail: async + fmt.Sprintf(" and min-replicas-to-write %s: if this primary fails and a replica is promoted, locks granted just before may be missing there and be granted twice", cmp.Or(minReplicas, "unknown"))})
}

// aclCommands are what distlock sends on a key's keys and channels: the
// client's own commands and the ones its scripts call (a script runs with
// the caller's permissions). keyed lists, per key or channel, each command
// sent on it as "NAME args", to be sent as NAME key args.
func (b *Backend) aclCommands(key string) [][]string {
	lk, tk := b.lockKey(key), b.tokenKey(key)
	cmds := [][]string{{"PING"}, {"TIME"}, {"EVALSHA", strings.Repeat("0", 40), "2", lk, tk}, {"EVAL", "return 1", "2", lk, tk},
		{"SCAN", "0", "MATCH", b.prefix + ":{*}", "COUNT", "100"}}
	type keyed struct{ key, cmds string }
	on := []keyed{
		{lk, "HGETALL|HGET owner|HSET owner x|PEXPIRE 1000|PTTL|DEL"},
		{tk, "GET|SET 1"},
		{b.waitingKey(key), "HMGET x|HSET x y|HDEL x"},
		{b.slotKey(key, 0, 2), "HSET owner x"},
		{b.queueKey(key), "ZADD 1 x|ZRANGE 0 -1|ZREM x|ZCARD"},
		{b.aliveKey(key), "ZADD 1 x|ZRANGEBYSCORE 0 1|ZSCORE x"},
		{b.channel(key), "SUBSCRIBE|UNSUBSCRIBE|PUBLISH 1"},
		{b.wakePrefix(key) + "0", "SUBSCRIBE|PUBLISH 1"},
		{b.ledgerKey(key), "HSET x y|HGETALL|HDEL x"}, // the run ledger (ledger.go)
	}
	if b.redlock { // the delayed restart's keys (redlock_lib.lua)
		on = append(on, keyed{b.bootKey(), "GET|SET 1"}, keyed{b.ttlsKey(), "ZREMRANGEBYSCORE -inf 0|ZRANGE 0 -1|ZSCORE 1|ZADD 1 1|PTTL|PEXPIRE 1000"})
	}
	for _, k := range on {
		for _, c := range strings.Split(k.cmds, "|") {
			f := strings.Fields(c)
			cmds = append(cmds, append([]string{f[0], k.key}, f[1:]...))
		}
	}
	return cmds
}

// aclCheck asks ACL DRYRUN whether our user may run each of aclCommands.
func (b *Backend) aclCheck(rctx reqCtx, key string) lock.Check {
	const name, beyond = "acl", " beyond the lock taken and released above"
	fix := "make sure the user may run EVALSHA, EVAL, PUBLISH, SUBSCRIBE and SCAN on the " + b.prefix + ":* keys and channels"
	ctx, cancel := rctx()
	defer cancel()
	user, err := b.c.Do(ctx, "ACL", "WHOAMI").Text()
	if err != nil {
		return lock.CannotCheck(name, "ask who this connection is (ACL WHOAMI) to check its permissions"+beyond, err, fix)
	}
	var denied []string
	grant := "ACL SETUSER " + user
	cmds := b.aclCommands(key)
	for i, c := range cmds {
		args := []any{"ACL", "DRYRUN", user}
		for _, a := range c {
			args = append(args, a)
		}
		res, err := b.c.Do(ctx, args...).Text()
		if err != nil {
			return lock.CannotCheck(name, fmt.Sprintf("check user %s's permissions with ACL DRYRUN (Redis 7, and the permission to run it)%s", user, beyond), err, fix)
		}
		if res != "OK" {
			denied = append(denied, fmt.Sprintf("%s (%s)", c[0], res))
		}
		if !slices.ContainsFunc(cmds[:i], func(p []string) bool { return p[0] == c[0] }) {
			grant += " +" + strings.ToLower(c[0])
		}
	}
	if len(denied) > 0 {
		return lock.Check{Name: name, Status: lock.CheckProblem,
			Detail: fmt.Sprintf("user %s may not run what distlock runs: %s", user, strings.Join(denied, "; ")),
			Fix:    fmt.Sprintf("%s ~%s:* &%s:*", grant, b.prefix, b.prefix)}
	}
	return lock.Check{Name: name, Status: lock.CheckOK,
		Detail: fmt.Sprintf("user %s may run all %d commands distlock sends, on %s's keys and channels (ACL DRYRUN)", user, len(cmds), b.lockKey(key))}
}

// serverTime reads c's clock (TIME).
func serverTime(c goredis.Cmdable) func(context.Context) (time.Time, error) {
	return func(ctx context.Context) (time.Time, error) { return c.Time(ctx).Result() }
}

// replicaClock is one replica's clock against the master's: diff is
// replica minus master, known to within unc.
type replicaClock struct {
	addr      string
	diff, unc time.Duration
	err       error
}

// replicaClockCheck reads every replica's clock (TIME, as clockCheck
// reads the master's) and compares it with the master's: a lease's expiry
// reaches replicas as the master's absolute time (PEXPIREAT), so a
// promoted replica whose clock is ahead ends the leases it inherits early
// (docs/GUARANTEES.md, "Redis replication carries the expiry as a clock
// reading").
func (b *Backend) replicaClockCheck(rctx reqCtx, ttl time.Duration) lock.Check {
	const name = "replica clocks"
	repl, err := b.read(rctx, source{info: "replication"})
	if err != nil {
		return lock.CannotCheck(name, "read INFO replication", err, "keep every Redis node's clock synchronised (NTP)")
	}
	master, munc, _, err := lock.ReadClock(rctx, serverTime(b.c))
	if err != nil {
		return lock.CannotCheck(name, "read the master's clock (TIME)", err, "keep every Redis node's clock synchronised (NTP)")
	}
	var clocks []replicaClock
	for k := 0; ; k++ {
		v, ok := repl["slave"+strconv.Itoa(k)]
		if !ok {
			break
		}
		f := parseInfo(strings.NewReplacer(",", "\n", "=", ":").Replace(v)) // ip=…,port=…,state=…
		addr := net.JoinHostPort(f["ip"], f["port"])
		c := goredis.NewClient(b.nodeOptions(addr))
		off, unc, _, err := lock.ReadClock(rctx, serverTime(c))
		c.Close()
		clocks = append(clocks, replicaClock{addr: addr, diff: off - master, unc: unc + munc, err: err})
	}
	return replicaClockVerdict(ttl, clocks)
}

// replicaClockVerdict judges the replicas' clocks against the master's:
// a replica ahead by more than the lease's margin (ttl/100 + 2 ms, what
// validUntil keeps back) would end inherited leases before their holders
// stop: a problem; ahead by more than half of it, a warning.
func replicaClockVerdict(ttl time.Duration, clocks []replicaClock) lock.Check {
	const name = "replica clocks"
	fix := "synchronise every Redis node's clock (NTP, one source for all): a lease's expiry reaches replicas as the master's absolute time, and a promoted replica whose clock is ahead ends every lease it inherits early by that much"
	if len(clocks) == 0 {
		return lock.Check{Name: name, Status: lock.CheckOK, Detail: "the master has no replicas"}
	}
	margin := time.Duration(float64(ttl)*lock.ClockDrift) + lock.ValidityDelta
	status := lock.CheckOK
	var parts []string
	for _, c := range clocks {
		switch {
		case c.err != nil:
			parts = append(parts, fmt.Sprintf("%s: cannot read its clock (%s)", c.addr, lock.FirstLine(c.err)))
			status = lock.Worse(status, lock.CheckWarning)
			continue
		case c.diff-c.unc > margin:
			status = lock.CheckProblem
		case c.diff > margin/2:
			status = lock.Worse(status, lock.CheckWarning)
		}
		parts = append(parts, fmt.Sprintf("%s is %s the master's", c.addr, lock.Offset(c.diff, c.unc)))
	}
	detail := strings.Join(parts, "; ") + fmt.Sprintf("; a promoted replica ahead by more than %s (ttl/100 + 2 ms at --ttl %s) ends inherited leases before their holders stop", margin, ttl)
	if status == lock.CheckOK {
		fix = ""
	}
	return lock.Check{Name: name, Status: status, Detail: detail, Fix: fix}
}
