package zookeeper

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// DefaultPort is used for servers given without a port.
const DefaultPort = "2181"

// Config is what New needs. ParseURL fills Servers and Chroot from a zk://
// URL; the opener fills Prefix and ConnectTimeout.
type Config struct {
	// Servers are "host:port" members of one ensemble.
	Servers []string
	// Chroot is the path every node lives under ("" = the root), without
	// a trailing '/': "/apps/ci".
	Chroot string
	// Prefix names the node under Chroot that holds the keys ("distlock"
	// when empty).
	Prefix string
	// ConnectTimeout bounds New's first session and the clean-up requests
	// on the way out (5s when zero).
	ConnectTimeout time.Duration
}

// String is the configuration as a URL.
func (c Config) String() string { return "zk://" + strings.Join(c.Servers, ",") + c.Chroot }

const urlForm = "zk://host:port[,host:port...][/chroot]"

// ParseURL parses zk://host[:port][,host[:port]...][/chroot]. Errors are
// lock.ErrInvalid, one line saying what to fix.
func ParseURL(raw string) (Config, error) {
	shown := raw
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			shown = raw[:j+3] + "xxxxx" + raw[i:] // never print a password
		}
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !strings.EqualFold(scheme, "zk") {
		return Config{}, lock.Invalidf("zookeeper URL %q must start with zk:// (expected %s)", shown, urlForm)
	}
	if strings.ContainsAny(rest, "?#@") {
		return Config{}, lock.Invalidf("zookeeper URL %q takes no user, query or fragment (expected %s)", shown, urlForm)
	}
	hosts, chroot, _ := strings.Cut(rest, "/")
	if hosts == "" {
		return Config{}, lock.Invalidf("zookeeper URL %q names no server (expected %s)", shown, urlForm)
	}
	var cfg Config
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return Config{}, lock.Invalidf("zookeeper URL %q has an empty server in its list (expected %s)", shown, urlForm)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port (or a bare IPv6 address in brackets).
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), DefaultPort
			if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && !strings.HasPrefix(h, "[")) {
				return Config{}, lock.Invalidf("zookeeper URL %q: server %q is not host or host:port (IPv6 goes in brackets)", shown, h)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Config{}, lock.Invalidf("zookeeper URL %q: server %q has no valid port (1-65535)", shown, h)
		}
		if host == "" {
			return Config{}, lock.Invalidf("zookeeper URL %q: server %q has no host", shown, h)
		}
		cfg.Servers = append(cfg.Servers, net.JoinHostPort(host, port))
	}
	chroot = strings.TrimRight(chroot, "/")
	if chroot != "" {
		for _, part := range strings.Split(chroot, "/") {
			if err := checkNodeName(part); err != nil {
				return Config{}, lock.Invalidf("zookeeper URL %q: chroot /%s: %v", shown, chroot, err)
			}
		}
		cfg.Chroot = "/" + chroot
	}
	return cfg, nil
}

// checkNodeName reports why name cannot be one node's name in a path.
func checkNodeName(name string) error {
	switch name {
	case "":
		return lock.Invalidf("empty path element (a double '/')")
	case ".", "..":
		return lock.Invalidf("%q is not allowed as a path element", name)
	}
	for _, r := range name {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
			return lock.Invalidf("path element %q holds a character ZooKeeper refuses", name)
		}
	}
	return nil
}
