package redis

import (
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

// TestMultiHostURLErrorsHideThePassword: a multi-host URL whose "@host"
// was forgotten reads user:password as host:port; the error says what is
// wrong in one line without the password.
func TestMultiHostURLErrorsHideThePassword(t *testing.T) {
	const pw = "s3cretpw"
	parsers := map[string]func(string) error{
		"redis+sentinel": func(s string) error { _, err := ParseSentinelURL(s); return err },
		"redis+cluster":  func(s string) error { _, err := ParseClusterURL(s); return err },
		"redlock":        func(s string) error { _, err := ParseRedlockURL(s); return err },
	}
	for _, tc := range []struct{ scheme, rest, want string }{
		{"redis+sentinel", "user:" + pw + "/mymaster", `the host "user" has no valid port`},
		{"redis+cluster", "us:er:" + pw, "an address is not host:port"},
		{"redlock", "user:" + pw + ",h:1,h:2", `the host "user" has no valid port`},
		{"redlock", "h:1,h2,h:3", `"h2" has no port`},
		{"redis+cluster", "h:1,,h:2", "empty host"},
		{"redis+cluster", "", "empty host"},
		{"redis+cluster", "h:0", `the host "h" has no valid port`},
		{"redis+cluster", ":6379", "an address is not host:port"},
		{"redis+sentinel", "u:" + pw + "@h:1,h:x/m", `the host "h" has no valid port`},
	} {
		raw := tc.scheme + "://" + tc.rest
		err := parsers[tc.scheme](raw)
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v, want lock.ErrInvalid", raw, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, pw) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q, want one line saying %q without the password", raw, msg, tc.want)
		}
	}
}

// TestMultiHostURLsAccepted: the host lists the multi-host URLs take.
func TestMultiHostURLsAccepted(t *testing.T) {
	cfg, err := ParseSentinelURL("redis+sentinel://u:p%2Fw@h1:26379,[::1]:26380/mymaster?db=2&wait=1")
	if err != nil {
		t.Fatal(err)
	}
	fo := cfg.Failover
	if got := strings.Join(fo.SentinelAddrs, ","); got != "h1:26379,[::1]:26380" || fo.MasterName != "mymaster" ||
		fo.DB != 2 || cfg.Wait != 1 || fo.Username != "u" || fo.Password != "p/w" {
		t.Errorf("sentinel URL parsed as %+v, wait %d", fo, cfg.Wait)
	}
	cl, err := ParseClusterURL("REDIS+CLUSTER://h1:7000,h2:7001")
	if err != nil || strings.Join(cl.Cluster.Addrs, ",") != "h1:7000,h2:7001" {
		t.Errorf("cluster URL: %v, %+v", err, cl.Cluster)
	}
	rl, err := ParseRedlockURL("redlock://h1:1,h2:2,h3:3")
	if err != nil || len(rl.Masters) != 3 || rl.Masters[2].Addr != "h3:3" {
		t.Errorf("redlock URL: %v, %+v", err, rl.Masters)
	}
}
