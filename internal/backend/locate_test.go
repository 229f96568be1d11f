package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/lock"
)

// Locate names an engine the same however its URL spells it, as far as
// the engine's own parser reads it alike: default ports, case, host
// order, user-info, parameters, TLS, a scheme's alias.
func TestLocateSameEngine(t *testing.T) {
	for _, tc := range []struct {
		want  string
		spell []string
	}{
		{"redis://db1:6379/0", []string{"redis://db1", "redis://DB1:6379/0", "redis://bob:s3cret@db1:6379", "rediss://db1:6379/0", "redis://db1:6379?dial_timeout=3s"}},
		{"redis://db1:6379/2", []string{"redis://db1:6379/2", "redis://:s3cret@db1/2"}},
		{"redis+sentinel://s1:26379,s2:26379/mymaster", []string{"redis+sentinel://s2:26379,s1:26379/mymaster", "rediss+sentinel://:s3cret@s1:26379,s2:26379/mymaster?sentinel_password=s3cret&wait=1"}},
		{"redis+sentinel://s1:26379/mymaster?db=3", []string{"redis+sentinel://s1:26379/mymaster?db=3"}},
		{"redis+cluster://n1:7000,n2:7001", []string{"redis+cluster://n2:7001,n1:7000", "redis+cluster://n1:7000,n2:7001,n1:7000?tls=true"}},
		{"redlock://a:6379,b:6379,c:6379", []string{"redlock://c:6379,a:6379,b:6379", "redlocks://u:s3cret@a:6379,b:6379,c:6379"}},
		{"etcd://e1:2379,e2:2379", []string{"etcd://e2,e1", "etcds://root:s3cret@e1:2379,e2:2379?cacert=/ca.pem", "etcd://e1:2379,e2:2379/"}},
		{"zk://z1:2181,z2:2181/apps/ci", []string{"zk://z2,z1:2181/apps/ci", "zk://z1,z2/apps/ci/"}},
		{"consul://c1:8500/kv/ci", []string{"consul://:s3cret@c1/kv/ci", "consul://c1:8500/kv/ci/"}},
		{"consul://c1:8501", []string{"consuls://c1", "consul://c1:8501/"}},
		{"postgres://pg1:5432/ops", []string{"postgres://u:s3cret@pg1/ops", "postgresql://u@PG1:5432/ops?sslmode=disable", "postgres://u@pg1/ops?sslmode=prefer&password=s3cret"}},
		{"mysql://my1:3306/ops", []string{"mysql://u:s3cret@my1/ops", "mysql://u@my1:3306/ops?tls=skip-verify"}},
		{"file:///run/locks", []string{"file:///run/locks", "file:///run/locks/", "file://localhost/run//locks"}},
	} {
		for _, raw := range tc.spell {
			got, err := Locate(raw)
			if err != nil || got != tc.want {
				t.Errorf("Locate(%q) = %q, %v; want %q", raw, got, err, tc.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, "@") {
				t.Errorf("Locate(%q) = %q holds user-info or a secret", raw, got)
			}
		}
	}
}

// Locate names engines that differ in scheme, a host, a port, a database,
// a master or a path differently.
func TestLocateOtherEngine(t *testing.T) {
	for _, pair := range [][2]string{
		{"redis://db1:6379/0", "redis://db1:6379/1"},
		{"redis://db1:6379", "redis://db1:6380"},
		{"redis://db1:6379", "redis://db2:6379"},
		{"redis://localhost:6379", "redis://127.0.0.1:6379"}, // names are not resolved
		{"redis://db1:6379", "redis+cluster://db1:6379"},
		{"redis+sentinel://s1:26379/a", "redis+sentinel://s1:26379/b"},
		{"redis+sentinel://s1:26379/a", "redis+sentinel://s1:26379/a?db=1"},
		{"etcd://e1,e2", "etcd://e1,e2,e3"},
		{"zk://z1/apps", "zk://z1/apps/ci"},
		{"consul://c1/kv", "consul://c1"},
		{"postgres://u@pg1/ops", "postgres://u@pg1/other"},
		{"mysql://u@my1/ops", "mysql://u@my1:3307/ops"},
		{"file:///run/locks", "file:///run/other"},
		{"file:///run/locks", "redis://run:6379"},
	} {
		a, errA := Locate(pair[0])
		b, errB := Locate(pair[1])
		if errA != nil || errB != nil || a == b {
			t.Errorf("Locate(%q) = %q, %v and Locate(%q) = %q, %v; want two names", pair[0], a, errA, pair[1], b, errB)
		}
	}
}

// Locate refuses what Open refuses, with Open's usage errors.
func TestLocateBadURL(t *testing.T) {
	for _, raw := range []string{"nosuch://h", "user:s3cret@host:6379", "file://relative/dir", "etcd://a,,b", "redlock://a:1,b:2"} {
		got, err := Locate(raw)
		if !errors.Is(err, lock.ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Locate(%q) = %q, %v; want a usage error without the password", raw, got, err)
		}
	}
}

// The default file engine ("" and file://) is its default directory,
// whatever the environment says (file.DefaultDir).
func TestLocateDefault(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/nonexistent-xdg")
	t.Setenv("TMPDIR", "/nonexistent-tmp")
	a, errA := Locate("")
	b, errB := Locate("file://")
	if errA != nil || errB != nil || a != b || a != "file://"+file.DefaultDir() {
		t.Fatalf(`Locate("") = %q, %v; Locate("file://") = %q, %v; want the default directory`, a, errA, b, errB)
	}
}
