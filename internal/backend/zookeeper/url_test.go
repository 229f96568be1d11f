package zookeeper

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		raw, servers, chroot string
	}{
		{"zk://zk1:2181", "[zk1:2181]", ""},
		{"zk://zk1", "[zk1:2181]", ""},
		{"ZK://zk1:2181,zk2:2182,zk3/apps/ci", "[zk1:2181 zk2:2182 zk3:2181]", "/apps/ci"},
		{"zk://10.0.0.1:2181/locks/", "[10.0.0.1:2181]", "/locks"},
		{"zk://[::1]:2181,[fe80::1]", "[[::1]:2181 [fe80::1]:2181]", ""},
		{"zk://zk1:2181/", "[zk1:2181]", ""},
	} {
		cfg, err := ParseURL(tc.raw)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.raw, err)
			continue
		}
		if got := fmt.Sprint(cfg.Servers); got != tc.servers || cfg.Chroot != tc.chroot {
			t.Errorf("ParseURL(%q) = servers %s chroot %q; want %s %q", tc.raw, got, cfg.Chroot, tc.servers, tc.chroot)
		}
	}
	for _, raw := range []string{
		"zk://", "zk:///chroot", "zk://zk1:notaport", "zk://zk1:0", "zk://zk1:70000", "zk://zk1,,zk2",
		"zk://zk1:2181/a//b", "zk://zk1:2181/a/../b", "zk://user:pw@zk1:2181", "zk://zk1:2181?x=1",
		"zk://:2181", "zk://zk1:2181/a\x01b", "etcd://zk1:2181", "zk://::1",
	} {
		_, err := ParseURL(raw)
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("ParseURL(%q) = %v, want lock.ErrInvalid", raw, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "zookeeper URL") {
			t.Errorf("ParseURL(%q): %q is not one line naming the zookeeper URL", raw, err)
		}
	}
	if _, err := ParseURL("zk://user:s3cret@zk1:2181"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a URL with a password: %v; want an error without the password", err)
	}
}

func TestEscapeName(t *testing.T) {
	for key, want := range map[string]string{
		"job:daily": "job:daily", "a/b": "a%2Fb", ".": "%2E", "..": "%2E%2E", "a b": "a%20b", "50%": "50%25",
	} {
		if got := escapeName(key); got != want {
			t.Errorf("escapeName(%q) = %q, want %q", key, got, want)
		}
		if checkNodeName(escapeName(key)) != nil {
			t.Errorf("escapeName(%q) = %q is not a valid node name", key, escapeName(key))
		}
	}
}
