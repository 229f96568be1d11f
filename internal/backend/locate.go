package backend

import (
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/backend/redis"
)

// place is where an engine keeps its locks, as its own parser reads the
// URL: the servers ("host:port", the default port added) and what on them
// (a database, a master, a chroot, a KV path, the file engine's
// directory: "" for nothing).
type place struct {
	hosts []string
	path  string
}

// Locate names the engine that rawURL reaches ("" = the file engine in
// its default directory) as a URL holding no user name, password, token
// or parameter: the engine's plain scheme (an alias or TLS twin is its
// engine's scheme), the hosts in lower case with their default ports,
// sorted, and the path: "redis://db1:6379/0",
// "etcd://e1:2379,e2:2379", "file:///run/distlock". Two URLs that its
// parser reads alike give the same name (redis://h and redis://h:6379/0,
// hosts in another order); it resolves no host name (localhost and
// 127.0.0.1 differ). A distlock acquire's handle carries it, so that
// release and extend can tell that they run on another engine. Errors
// are Open's for the same URL.
func Locate(rawURL string) (string, error) {
	e, rawURL, err := engineOf(rawURL)
	if err != nil {
		return "", err
	}
	p, err := e.locate(rawURL)
	if err != nil {
		return "", err
	}
	hosts := make([]string, len(p.hosts))
	for i, h := range p.hosts {
		hosts[i] = strings.ToLower(h)
	}
	slices.Sort(hosts)
	return e.Scheme + "://" + strings.Join(slices.Compact(hosts), ",") + p.path, nil
}

// locateFile is the file engine's place: its directory, cleaned (the
// default directory for file://).
func locateFile(rawURL string) (place, error) {
	dir, err := fileDir(rawURL)
	if err != nil {
		return place{}, err
	}
	if dir == "" {
		dir = file.DefaultDir()
	}
	return place{path: filepath.Clean(dir)}, nil
}

// redisPlace is the place of every Redis topology: one server and its
// database, the sentinels and their master (and its database when not
// 0), a cluster's nodes, Redlock's masters.
func redisPlace(c redis.Config) place {
	switch {
	case c.Masters != nil:
		var p place
		for _, m := range c.Masters {
			p.hosts = append(p.hosts, m.Addr)
		}
		return p
	case c.Cluster != nil:
		return place{hosts: c.Cluster.Addrs}
	case c.Failover != nil:
		p := place{hosts: c.Failover.SentinelAddrs, path: "/" + c.Failover.MasterName}
		if c.Failover.DB != 0 {
			p.path += "?db=" + strconv.Itoa(c.Failover.DB)
		}
		return p
	}
	return place{hosts: []string{c.Options.Addr}, path: "/" + strconv.Itoa(c.Options.DB)}
}

// hostPort joins host and port as the URLs write them.
func hostPort(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
