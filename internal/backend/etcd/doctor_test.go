package etcd

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/embedetcd"
	"github.com/distlock/distlock/internal/testenv/wait"
)

func TestClusterVerdict(t *testing.T) {
	for _, tc := range []struct {
		v    clusterView
		want lock.CheckStatus
		says string
	}{
		{clusterView{voters: 3, endpoints: 3, version: "3.5.9", leader: true}, lock.CheckOK, "3 voting member(s), etcd 3.5.9, healthy, with a leader; tolerates 1 failure(s)"},
		{clusterView{voters: 1, endpoints: 1, leader: true}, lock.CheckWarning, "no fault tolerance"},
		{clusterView{voters: 2, endpoints: 2, leader: true}, lock.CheckWarning, "quorum of 2"},
		{clusterView{voters: 5, learners: 1, endpoints: 1, leader: true}, lock.CheckWarning, "and 1 learner(s), tolerating 2 failure(s); but --backend names one endpoint"},
		{clusterView{voters: 3, endpoints: 3, leader: false}, lock.CheckProblem, "no endpoint knows a leader"},
		{clusterView{voters: 3, endpoints: 3, leader: true, errors: []string{"alarm NOSPACE on member 1"}}, lock.CheckProblem, "alarm NOSPACE"},
	} {
		c := clusterVerdict(tc.v)
		if c.Name != "cluster" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status == lock.CheckOK) != (c.Fix == "") {
			t.Errorf("clusterVerdict(%+v) = %+v, want %s saying %q", tc.v, c, tc.want, tc.says)
		}
	}
}

func TestLeaseTTLVerdict(t *testing.T) {
	if c := leaseTTLVerdict(2*time.Second, time.Second); c.Status != lock.CheckWarning || !strings.Contains(c.Fix, "--ttl 2s or more") {
		t.Errorf("a 2s minimum against --ttl 1s: %+v", c)
	}
	if c := leaseTTLVerdict(2*time.Second, 1500*time.Millisecond); c.Status != lock.CheckOK || !strings.Contains(c.Detail, "--ttl 1.5s: the server grants a lease of 2s") {
		t.Errorf("a 2s minimum against --ttl 1.5s (a 2s lease): %+v", c)
	}
	if c := leaseTTLVerdict(time.Second, 30*time.Second); c.Status != lock.CheckOK {
		t.Errorf("a 1s minimum against --ttl 30s: %+v", c)
	}
}

func TestTLSVerdict(t *testing.T) {
	for _, tc := range []struct {
		eps  []string
		want lock.CheckStatus
		says string
	}{
		{[]string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, lock.CheckOK, "TLS to every endpoint"},
		{[]string{"http://127.0.0.1:2379", "http://[::1]:2379", "http://localhost:2379"}, lock.CheckOK, "loopback"},
		{[]string{"https://10.0.0.1:2379", "http://10.0.0.2:2379"}, lock.CheckWarning, "plaintext to 10.0.0.2:2379"},
	} {
		if c := tlsVerdict(tc.eps); c.Status != tc.want || !strings.Contains(c.Detail, tc.says) {
			t.Errorf("tlsVerdict(%v) = %+v, want %s saying %q", tc.eps, c, tc.want, tc.says)
		}
	}
}

func TestAuthVerdict(t *testing.T) {
	if c := authVerdict(false, "", "distlock"); c.Status != lock.CheckWarning || !strings.Contains(c.Fix, "readwrite on distlock/") {
		t.Errorf("auth off: %+v", c)
	}
	if c := authVerdict(true, "alice", "distlock"); c.Status != lock.CheckOK || !strings.Contains(c.Detail, `"alice"`) {
		t.Errorf("auth on: %+v", c)
	}
}

func doctorByName(t *testing.T, b *Backend, ttl time.Duration) map[string]lock.Check {
	t.Helper()
	out := map[string]lock.Check{}
	start := time.Now()
	for _, c := range b.Doctor(context.Background(), lock.DoctorRequest{Key: "doctor:t", TTL: ttl, Timeout: 5 * time.Second}) {
		out[c.Name] = c
	}
	t.Logf("Doctor took %s", time.Since(start).Round(time.Millisecond))
	for _, n := range []string{"cluster", "lease-ttl", "auth", "tls", "clock"} {
		if _, ok := out[n]; !ok {
			t.Errorf("no %s check in %v", n, out)
		}
	}
	return out
}

// TestDoctorOnServer: a single-member test cluster without auth, over
// loopback: cluster and auth warn, the rest passes; the clock may only warn
// when the machine is too loaded to time it, never be a problem.
func TestDoctorOnServer(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		got := doctorByName(t, b, 30*time.Second)
		want := map[string]lock.CheckStatus{"cluster": lock.CheckWarning, "lease-ttl": lock.CheckOK, "auth": lock.CheckWarning, "tls": lock.CheckOK}
		for n, st := range want {
			if got[n].Status != st {
				t.Errorf("%s: %+v, want %s", n, got[n], st)
			}
		}
		if c := got["clock"]; c.Status == lock.CheckProblem || !strings.Contains(c.Detail, "countdown over") {
			t.Errorf("clock: %+v", c)
		}
		t.Logf("clock: %s", got["clock"].Detail)
		// the measuring lease is revoked
		leases, err := b.cli.Leases(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases.Leases {
			if ttl, err := b.cli.TimeToLive(context.Background(), l.ID); err == nil && ttl.GrantedTTL == clockLease {
				t.Errorf("the measuring lease %x is still there", l.ID)
			}
		}
	})
}

// TestDoctorWithAuth: a user with readwrite on the prefix only (not root)
// gets every check made and none of them a problem; auth is ok.
func TestDoctorWithAuth(t *testing.T) {
	ep, stop, err := embedetcd.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := wait.Context(t, 30*time.Second)
	func() {
		raw, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		for _, step := range []func() error{
			func() error { _, err := raw.UserAdd(ctx, "root", "rootpw"); return err },
			func() error { _, err := raw.UserGrantRole(ctx, "root", "root"); return err },
			func() error { _, err := raw.UserAdd(ctx, "alice", "alicepw"); return err },
			func() error { _, err := raw.RoleAdd(ctx, "locker"); return err },
			func() error {
				_, err := raw.RoleGrantPermission(ctx, "locker", "distlock/", clientv3.GetPrefixRangeEnd("distlock/"), clientv3.PermissionType(clientv3.PermReadWrite))
				return err
			},
			func() error { _, err := raw.UserGrantRole(ctx, "alice", "locker"); return err },
			func() error { _, err := raw.AuthEnable(ctx); return err },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
	}()
	cfg, err := ParseURL("etcd://alice:alicepw@" + ep)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialTimeout = 5 * time.Second
	b, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := doctorByName(t, b, 30*time.Second)
	for n, c := range got {
		t.Logf("%s: %s: %s", n, c.Status, c.Detail)
		if c.Status == lock.CheckProblem {
			t.Errorf("%s: %+v", n, c)
		}
	}
	if c := got["auth"]; c.Status != lock.CheckOK || !strings.Contains(c.Detail, `"alice"`) {
		t.Errorf("auth: %+v", c)
	}
}
