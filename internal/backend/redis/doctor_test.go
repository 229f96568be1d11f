package redis

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func TestEvictionVerdict(t *testing.T) {
	for _, tc := range []struct {
		policy, maxmemory string
		want              lock.CheckStatus
		says              string
	}{
		{"noeviction", "0", lock.CheckOK, "never drops a held lock"},
		{"noeviction", "1073741824", lock.CheckOK, "noeviction"},
		{"allkeys-lru", "1073741824", lock.CheckProblem, "allkeys-lru (maxmemory 1073741824) evicts any key"},
		{"allkeys-random", "100", lock.CheckProblem, "token counters can vanish"},
		{"volatile-lru", "100", lock.CheckProblem, "every distlock lock hash has one"},
		{"volatile-ttl", "100", lock.CheckProblem, "volatile-ttl"},
		{"allkeys-lfu", "0", lock.CheckWarning, "maxmemory is 0 (no limit)"},
		{"volatile-lfu", "0", lock.CheckWarning, "nothing is evicted today"},
		{"someday-policy", "100", lock.CheckWarning, "does not know"},
	} {
		c := evictionVerdict(tc.policy, tc.maxmemory)
		if c.Name != "maxmemory-policy" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status == lock.CheckOK) != (c.Fix == "") {
			t.Errorf("evictionVerdict(%q, %q) = %+v, want %s saying %q", tc.policy, tc.maxmemory, c, tc.want, tc.says)
		}
		if c.Status != lock.CheckOK && !strings.Contains(c.Fix, "noeviction") {
			t.Errorf("evictionVerdict(%q): the fix should say noeviction: %q", tc.policy, c.Fix)
		}
	}
}

func TestPersistenceVerdict(t *testing.T) {
	for _, tc := range []struct {
		aof, fsync, save string
		want             lock.CheckStatus
		says             string
	}{
		{"yes", "always", "", lock.CheckOK, "restores the held locks"},
		{"yes", "everysec", "3600 1", lock.CheckOK, "a crash can lose the last second"},
		{"no", "everysec", "3600 1 300 100", lock.CheckWarning, `snapshots only (save "3600 1 300 100")`},
		{"no", "everysec", "", lock.CheckWarning, "no persistence"},
	} {
		c := persistenceVerdict(tc.aof, tc.fsync, tc.save)
		if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || !strings.Contains(c.Detail, "tokens keep rising") {
			t.Errorf("persistenceVerdict(%q, %q, %q) = %+v, want %s saying %q", tc.aof, tc.fsync, tc.save, c, tc.want, tc.says)
		}
	}
}

// TestRedlockPersistenceVerdict: a Redlock master must keep every lock
// across a restart (appendfsync always) or none (noticed, delayed
// restart); anything in between is a problem.
func TestRedlockPersistenceVerdict(t *testing.T) {
	for _, tc := range []struct {
		aof, fsync, save string
		want             lock.CheckStatus
		says             string
	}{
		{"yes", "always", "", lock.CheckOK, "appendfsync always"},
		{"yes", "everysec", "", lock.CheckProblem, "appendfsync everysec"},
		{"yes", "no", "3600 1", lock.CheckProblem, "appendfsync no"},
		{"no", "always", "3600 1 300 100", lock.CheckProblem, `snapshots only (save "3600 1 300 100")`},
		{"no", "everysec", "", lock.CheckWarning, "delayed restart"},
	} {
		c := redlockPersistenceVerdict(tc.aof, tc.fsync, tc.save)
		if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) {
			t.Errorf("redlockPersistenceVerdict(%q, %q, %q) = %+v, want %s saying %q", tc.aof, tc.fsync, tc.save, c, tc.want, tc.says)
		}
	}
}

// TestReplicaClockVerdict: a replica whose clock is ahead of the master's
// by more than the lease's margin (ttl/100 + 2 ms) would end inherited
// leases early once promoted: a problem; behind is harmless.
func TestReplicaClockVerdict(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		clocks []replicaClock
		want   lock.CheckStatus
		says   string
	}{
		{nil, lock.CheckOK, "no replicas"},
		{[]replicaClock{{addr: "r1:6379", diff: 10 * ms, unc: ms}}, lock.CheckOK, "r1:6379 is 10ms (±1ms) ahead of the master's"},
		{[]replicaClock{{addr: "r1:6379", diff: -5 * time.Second, unc: ms}}, lock.CheckOK, "behind"},
		{[]replicaClock{{addr: "r1:6379", diff: 200 * ms, unc: ms}}, lock.CheckWarning, "ahead"},
		{[]replicaClock{{addr: "r1:6379", diff: ms}, {addr: "r2:6379", diff: 5 * time.Second, unc: ms}}, lock.CheckProblem, "r2:6379 is 5s (±1ms) ahead"},
		{[]replicaClock{{addr: "r1:6379", diff: 5 * time.Second}, {addr: "r2:6379", err: errors.New("refused")}}, lock.CheckProblem, "cannot read its clock"},
	} {
		c := replicaClockVerdict(30*time.Second, tc.clocks)
		if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status != lock.CheckOK) != (c.Fix != "") {
			t.Errorf("replicaClockVerdict(%+v) = %+v, want %s saying %q", tc.clocks, c, tc.want, tc.says)
		}
	}
}

func TestReplicationVerdict(t *testing.T) {
	for _, tc := range []struct {
		info map[string]string
		min  string
		want lock.CheckStatus
		says string
	}{
		{map[string]string{"role": "master", "connected_slaves": "0"}, "0", lock.CheckOK, "no replicas"},
		{map[string]string{"role": "master", "connected_slaves": "2"}, "0", lock.CheckWarning, "2 replica(s), replicated asynchronously and min-replicas-to-write 0"},
		{map[string]string{"role": "master", "connected_slaves": "2"}, "", lock.CheckWarning, "min-replicas-to-write unknown"},
		{map[string]string{"role": "master", "connected_slaves": "1"}, "1", lock.CheckOK, "narrows"},
		{map[string]string{"role": "slave", "master_host": "10.0.0.1", "master_port": "6379"}, "0", lock.CheckProblem, "replica of 10.0.0.1:6379"},
		{map[string]string{}, "0", lock.CheckWarning, `role ""`},
	} {
		c := replicationVerdict(tc.info, tc.min)
		if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) {
			t.Errorf("replicationVerdict(%v, %q) = %+v, want %s saying %q", tc.info, tc.min, c, tc.want, tc.says)
		}
	}
}

func TestDeploymentVerdict(t *testing.T) {
	for _, tc := range []struct {
		srv, cluster map[string]string
		want         lock.CheckStatus
		says         string
	}{
		{map[string]string{"redis_mode": "standalone", "redis_version": "7.2.4"}, map[string]string{"cluster_enabled": "0"}, lock.CheckOK, "standalone Redis 7.2.4"},
		{map[string]string{"redis_mode": "sentinel"}, nil, lock.CheckProblem, "Sentinel"},
		{map[string]string{"redis_mode": "cluster"}, nil, lock.CheckProblem, "MOVED"},
		{map[string]string{"redis_mode": "standalone"}, map[string]string{"cluster_enabled": "1"}, lock.CheckProblem, "node of a Redis Cluster"},
	} {
		info := maps.Clone(tc.srv)
		maps.Copy(info, tc.cluster)
		c := deploymentVerdict(Single, info, "h:6379")
		if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) {
			t.Errorf("deploymentVerdict(%v, %v) = %+v, want %s saying %q", tc.srv, tc.cluster, c, tc.want, tc.says)
		}
	}
}

func TestParseInfo(t *testing.T) {
	m := parseInfo("# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=10.0.0.2,port=6379,state=online\r\n")
	if m["role"] != "master" || m["connected_slaves"] != "1" || m["slave0"] != "ip=10.0.0.2,port=6379,state=online" {
		t.Errorf("parseInfo = %v", m)
	}
}

func doctorChecks(t *testing.T, b *Backend, ttl time.Duration) map[string]lock.Check {
	t.Helper()
	out := map[string]lock.Check{}
	for _, c := range b.Doctor(context.Background(), lock.DoctorRequest{Key: "doctor:t", TTL: ttl, Timeout: 5 * time.Second}) {
		if _, dup := out[c.Name]; dup {
			t.Errorf("two %s checks", c.Name)
		}
		out[c.Name] = c
	}
	for _, n := range []string{"deployment", "maxmemory-policy", "persistence", "replication", "acl", "clock"} {
		if _, ok := out[n]; !ok {
			t.Errorf("no %s check in %v", n, out)
		}
	}
	return out
}

// TestDoctorOnServer: the harness's redis-server (standalone, noeviction,
// no persistence, default user) passes everything but persistence, which
// warns; miniredis refuses CONFIG, INFO server and ACL, which are warnings
// saying so, never problems.
func TestDoctorOnServer(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		b := newTestBackend(t, s)
		got := doctorChecks(t, b, 30*time.Second)
		for name, c := range got {
			want := lock.CheckOK
			switch {
			case name == "persistence" || (s.mini != nil && name != "clock"):
				want = lock.CheckWarning
			}
			if c.Status != want {
				t.Errorf("%s: %+v, want %s", name, c, want)
			}
		}
		if s.mini == nil && !strings.Contains(got["acl"].Detail, "user default may run all") {
			t.Errorf("acl: %+v", got["acl"])
		}
	})
}

// TestDoctorEvictingServer: a redis-server that may evict is a problem
// named maxmemory-policy.
func TestDoctorEvictingServer(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		if s.mini != nil {
			t.Skip("miniredis has no CONFIG SET")
		}
		b := newTestBackend(t, s)
		ctx := context.Background()
		for _, p := range []string{"allkeys-lru", "volatile-lru"} {
			if err := b.c.ConfigSet(ctx, "maxmemory-policy", p).Err(); err != nil {
				t.Fatal(err)
			}
			if err := b.c.ConfigSet(ctx, "maxmemory", "1gb").Err(); err != nil {
				t.Fatal(err)
			}
			if c := doctorChecks(t, b, 30*time.Second)["maxmemory-policy"]; c.Status != lock.CheckProblem || !strings.Contains(c.Detail, p) {
				t.Errorf("with %s: %+v, want a problem", p, c)
			}
		}
	})
}

// TestDoctorACL: a user that may not PUBLISH, or not touch the run
// ledger's hash, is a problem naming what it may not run and the fix; a
// user that may not run ACL DRYRUN is a warning.
func TestDoctorACL(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		if s.mini != nil {
			t.Skip("miniredis has no ACL")
		}
		admin := newTestBackend(t, s)
		ctx := context.Background()
		for _, u := range [][]any{
			{"ACL", "SETUSER", "nopub", "on", ">pw", "~*", "&*", "+@all", "-publish"},
			{"ACL", "SETUSER", "noacl", "on", ">pw", "~*", "&*", "+@all", "-acl"},
			{"ACL", "SETUSER", "noledger", "on", ">pw", "~distlock:{*}", "~distlock:{*}:token", "~distlock:{*}:queue",
				"~distlock:{*}:alive", "~distlock:{*}:waiting", "~distlock:{*}:slot:*", "&*", "+@all"},
		} {
			if err := admin.c.Do(ctx, u...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			user string
			want lock.CheckStatus
			says string
		}{
			{"nopub", lock.CheckProblem, "user nopub may not run what distlock runs: PUBLISH"},
			{"noacl", lock.CheckWarning, "cannot ask who this connection is"},
			{"noledger", lock.CheckProblem, "user noledger may not run what distlock runs: HSET (This user has no permissions to access the 'distlock:{doctor:t}:ledger' key); HGETALL"},
		} {
			cfg, err := ParseURL("redis://" + tc.user + ":pw@" + s.addr)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Prefix = "distlock"
			cfg.ConnectTimeout = 5 * time.Second
			b, err := New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			c := b.aclCheck(func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 5*time.Second) }, "doctor:t")
			if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) {
				t.Errorf("%s: %+v, want %s saying %q", tc.user, c, tc.want, tc.says)
			}
			if c.Status == lock.CheckProblem && !strings.Contains(c.Fix, "ACL SETUSER "+tc.user) {
				t.Errorf("%s: the fix should be an ACL SETUSER: %q", tc.user, c.Fix)
			}
		}
	})
}

// TestDoctorClockOffset: a server whose TIME is 5s ahead is a warning
// naming the offset (miniredis's TIME follows SetTime).
func TestDoctorClockOffset(t *testing.T) {
	eachRedis(t, func(t *testing.T, s testServer) {
		if s.mini == nil {
			t.Skip("only miniredis's clock can be set")
		}
		s.mini.SetTime(time.Now().Add(5 * time.Second))
		b := newTestBackend(t, s)
		c := doctorChecks(t, b, 30*time.Second)["clock"]
		if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "ahead of this machine's") || !strings.Contains(c.Detail, "allowance at --ttl 30s is 300ms") {
			t.Errorf("clock 5s ahead: %+v", c)
		}
	})
}
