package etcd

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

func TestParseURL(t *testing.T) {
	good := []struct {
		raw  string
		want Config
	}{
		{"etcd://127.0.0.1:2379", Config{Endpoints: []string{"127.0.0.1:2379"}}},
		{"etcd://localhost", Config{Endpoints: []string{"localhost:2379"}}},
		{"ETCD://h:1/", Config{Endpoints: []string{"h:1"}}},
		{"etcd://a:1,b:2,c", Config{Endpoints: []string{"a:1", "b:2", "c:2379"}}},
		{"etcd://[::1]:2379,[fe80::1]", Config{Endpoints: []string{"[::1]:2379", "[fe80::1]:2379"}}},
		{"etcd://alice@h:1", Config{Endpoints: []string{"h:1"}, Username: "alice"}},
		{"etcd://alice:s3cret@h:1,h2:2", Config{Endpoints: []string{"h:1", "h2:2"}, Username: "alice", Password: "s3cret"}},
		{"etcd://al%40ce:p%2Fa%3Fs%23s%40w@h:1", Config{Endpoints: []string{"h:1"}, Username: "al@ce", Password: "p/a?s#s@w"}},
		{"etcd://alice:p:a:ss@h:1", Config{Endpoints: []string{"h:1"}, Username: "alice", Password: "p:a:ss"}},
		{"etcds://h:2379", Config{Endpoints: []string{"h:2379"}, TLS: true}},
		{"etcds://u:pw@h1:1,h2:2/?cacert=/ca.pem&cert=/c.pem&key=/k.pem",
			Config{Endpoints: []string{"h1:1", "h2:2"}, Username: "u", Password: "pw", TLS: true, TLSFiles: urlx.TLSFiles{CACert: "/ca.pem", Cert: "/c.pem", Key: "/k.pem"}}},
		{"etcds://h?cacert=/etc/ssl/ca.pem", Config{Endpoints: []string{"h:2379"}, TLS: true, TLSFiles: urlx.TLSFiles{CACert: "/etc/ssl/ca.pem"}}},
	}
	for _, tc := range good {
		got, err := ParseURL(tc.raw)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.raw, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseURL(%q) = %+v, want %+v", tc.raw, got, tc.want)
		}
	}

	const pw = "hunter2xyz"
	bad := []struct {
		raw, wantMsg string
	}{
		{"127.0.0.1:2379", "no scheme"},
		{"redis://h:1", "not etcd"},
		{"etcd://", "no host"},
		{"etcd://u:" + pw + "@", "no host"},
		{"etcd://h:1,,h:2", "empty host"},
		{"etcd://h:0", "invalid port"},
		{"etcd://h:99999", "invalid port"},
		{"etcd://h:abc", "invalid port"},
		{"etcd://u:" + pw + "@h:x", "invalid port"},
		{"etcd://u:" + pw, "invalid port"}, // forgot @host: the "port" is the password
		{"etcd://u:" + pw + ":x", "not host:port"},
		{"etcd://u:hun/ter2xyz@h:1", "percent-encode"},
		{"etcd://u:hun?ter2xyz@h:1", "percent-encode"},
		{"etcd://u:hunter%zz@h:1", "percent-encoding"},
		{"etcd://:" + pw + "@h:1", "no user name"},
		{"etcd://h:1/some/path", "path"},
		{"etcd://h:1?cacert=/ca.pem", "etcds://"},
		{"etcds://h:1?cert=/c.pem", "both cert and key"},
		{"etcds://h:1?key=/k.pem", "both cert and key"},
		{"etcds://h:1?cacert=", "non-empty"},
		{"etcds://h:1?cacert=a&cacert=b", "exactly one"},
		{"etcds://u:" + pw + "@h:1?password=" + pw, "unknown"},
		{"etcd://u:" + pw + "@h:1?x=%zz", "malformed"},
		{"etcd://ho st:1", "invalid host"},
	}
	for _, tc := range bad {
		_, err := ParseURL(tc.raw)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded, want an error", tc.raw)
			continue
		}
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("ParseURL(%q) = %v, not lock.ErrInvalid", tc.raw, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.wantMsg) {
			t.Errorf("ParseURL(%q) = %q, want it to mention %q", tc.raw, msg, tc.wantMsg)
		}
		for _, secret := range []string{pw, "hunter", "ter2xyz"} {
			if strings.Contains(msg, secret) {
				t.Errorf("ParseURL(%q) error %q holds the password", tc.raw, msg)
			}
		}
	}
}

func TestConfigStringHidesPassword(t *testing.T) {
	cfg, err := ParseURL("etcds://alice:hunter2xyz@h1:1,h2:2?cacert=/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprint(cfg)} {
		if strings.Contains(s, "hunter2xyz") {
			t.Errorf("%q holds the password", s)
		}
	}
	if got, want := cfg.String(), "etcds://alice:xxxxx@h1:1,h2:2?cacert=%2Fca.pem"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestLeaseSecondsRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Millisecond, 2},
		{1500 * time.Millisecond, 2},
		{30 * time.Second, 30},
		{90*time.Second + 1, 91},
	} {
		if got := leaseSeconds(tc.ttl); got != tc.want {
			t.Errorf("leaseSeconds(%s) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}

func TestQueuePrefixesDoNotNest(t *testing.T) {
	b := &Backend{prefix: "distlock"}
	keys := []string{"a", "a/b", "a/", "a%2Fb", "a/b/c", "job:daily", "ä/ö"}
	for _, k1 := range keys {
		for _, k2 := range keys {
			if k1 != k2 && strings.HasPrefix(b.queuePrefix(k2), b.queuePrefix(k1)) {
				t.Errorf("queue of %q (%s) lies inside the queue of %q (%s)", k2, b.queuePrefix(k2), k1, b.queuePrefix(k1))
			}
		}
	}
	if got := b.queuePrefix("job:daily"); got != "distlock/job:daily/" {
		t.Errorf("queuePrefix(job:daily) = %q", got)
	}
}
