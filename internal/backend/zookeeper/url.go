package zookeeper

import (
	"strings"
	"time"

	"github.com/distlock/distlock/internal/backend/urlx"
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

// urlSpec is how ZooKeeper reads its URLs: the servers of one ensemble
// and a chroot, nothing else; an IPv6 address goes in brackets.
var urlSpec = urlx.Spec{
	Name: "zookeeper", Scheme: "zk", Form: urlForm, Port: DefaultPort,
	NoUser: true, NoFragment: true, Path: urlx.Nodes,
}

// ParseURL parses zk://host[:port][,host[:port]...][/chroot]. Errors are
// lock.ErrInvalid, one line saying what to fix.
func ParseURL(raw string) (Config, error) {
	u, err := urlx.Parse(raw, urlSpec)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Servers: u.Hosts}
	if u.Path != "" {
		for _, part := range strings.Split(u.Path, "/") {
			if err := checkNodeName(part); err != nil {
				return Config{}, lock.Invalidf("zookeeper URL: chroot /%s: %v", u.Path, err)
			}
		}
		cfg.Chroot = "/" + u.Path
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
