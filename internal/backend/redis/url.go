package redis

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// Config is what New needs: go-redis options parsed from the URL (Options
// for one server, Failover for Sentinel, Cluster for a cluster) plus
// distlock's own settings.
type Config struct {
	Options  *goredis.Options
	Failover *goredis.FailoverOptions
	Cluster  *goredis.ClusterOptions
	Topology Topology
	// Wait is how many replicas must acknowledge every grant and renewal
	// (WAIT, see replicas.go); 0 does not wait.
	Wait           int
	Password       string // used when the URL has none
	Prefix         string
	ConnectTimeout time.Duration
	addr           string // "redis at host:port", for messages
}

// ParseURL parses redis:// and rediss:// URLs with go-redis's own parser
// (user, password, db number, query options). Errors never hold the password.
func ParseURL(raw string) (Config, error) {
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Config{}, lock.Invalidf("redis URL is malformed: %v (expected redis://[user:password@]host:port[/db])", err)
	}
	return Config{Options: opts, Password: opts.Password, addr: "redis at " + opts.Addr}, nil
}

// Topology is how the Redis servers behind a URL are deployed.
type Topology int

const (
	// Single is one server (redis://, rediss://), perhaps with replicas
	// distlock does not know of.
	Single Topology = iota
	// Sentinel is a master found through Redis Sentinel (redis+sentinel://).
	Sentinel
	// Cluster is a Redis Cluster (redis+cluster://).
	Cluster
)

const (
	sentinelForm = "redis+sentinel://[user:password@]host:port[,host:port...]/MASTERNAME[?db=N&wait=N&tls=true] (rediss+sentinel:// for TLS)"
	clusterForm  = "redis+cluster://[user:password@]host:port[,host:port...][?tls=true] (rediss+cluster:// for TLS)"
)

// ParseSentinelURL parses redis+sentinel:// URLs: the sentinels' addresses,
// the name of the master they watch, the database number, and wait (the
// replicas that must acknowledge every grant and renewal, see replicas.go).
// The user and password are the data nodes' (the sentinels' own, if they
// need one: sentinel_user, sentinel_password). Errors never hold the
// password.
func ParseSentinelURL(raw string) (Config, error) {
	u, err := parseMultiHost(raw, "redis+sentinel", sentinelForm)
	if err != nil {
		return Config{}, err
	}
	master := strings.Trim(u.path, "/")
	if master == "" || strings.Contains(master, "/") {
		return Config{}, lock.Invalidf("redis+sentinel URL must name the master after the hosts: %s", sentinelForm)
	}
	tlsCfg, err := takeTLS(&u, "redis+sentinel")
	if err != nil {
		return Config{}, err
	}
	fo := &goredis.FailoverOptions{MasterName: master, SentinelAddrs: u.hosts, Username: u.user, Password: u.pass, TLSConfig: tlsCfg}
	cfg := Config{Failover: fo, Password: u.pass, Topology: Sentinel,
		addr: "redis sentinel master " + master + " (sentinels " + strings.Join(u.hosts, ",") + ")"}
	for k, vs := range u.query {
		v := vs[len(vs)-1]
		switch k {
		case "db":
			if fo.DB, err = strconv.Atoi(v); err != nil || fo.DB < 0 {
				return Config{}, lock.Invalidf("redis+sentinel URL: db=%q is not a database number", v)
			}
		case "wait":
			if cfg.Wait, err = strconv.Atoi(v); err != nil || cfg.Wait < 0 {
				return Config{}, lock.Invalidf("redis+sentinel URL: wait=%q is not a number of replicas", v)
			}
		case "sentinel_user":
			fo.SentinelUsername = v
		case "sentinel_password":
			fo.SentinelPassword = v
		default:
			return Config{}, lock.Invalidf("redis+sentinel URL: unknown parameter %q (known: db, wait, sentinel_user, sentinel_password, "+tlsParams+")", k)
		}
	}
	return cfg, nil
}

// ParseClusterURL parses redis+cluster:// URLs: some of the cluster's
// nodes (the client learns the rest from them). Errors never hold the
// password.
func ParseClusterURL(raw string) (Config, error) {
	u, err := parseMultiHost(raw, "redis+cluster", clusterForm)
	if err != nil {
		return Config{}, err
	}
	if strings.Trim(u.path, "/") != "" {
		return Config{}, lock.Invalidf("redis+cluster URL has a path: a cluster has only database 0 (%s)", clusterForm)
	}
	tlsCfg, err := takeTLS(&u, "redis+cluster")
	if err != nil {
		return Config{}, err
	}
	for k := range u.query {
		if k == "wait" {
			return Config{}, lock.Invalidf("redis+cluster URL: wait= is not supported on a cluster (only on redis+sentinel://): distlock does not wait for a cluster's replicas")
		}
		return Config{}, lock.Invalidf("redis+cluster URL: unknown parameter %q (known: "+tlsParams+"; %s)", k, clusterForm)
	}
	return Config{Cluster: &goredis.ClusterOptions{Addrs: u.hosts, Username: u.user, Password: u.pass, TLSConfig: tlsCfg},
		Password: u.pass, Topology: Cluster, addr: "redis cluster at " + strings.Join(u.hosts, ",")}, nil
}

// checkHostPort reports why h is not one host:port of a multi-host URL.
// It echoes at most the host: with the "@host" forgotten,
// user:password reads as host:port, and what looks like a port is the
// password.
func checkHostPort(h, scheme, form string) error {
	host, port, err := net.SplitHostPort(h)
	switch {
	case h == "":
		return lock.Invalidf("%s URL has an empty host in its host list (stray comma?): %s", scheme, form)
	case err != nil && !strings.Contains(h, ":"):
		return lock.Invalidf("%s URL: %q has no port (%s)", scheme, h, form)
	case err != nil || host == "" || port == "":
		return lock.Invalidf("%s URL: an address is not host:port (IPv6 as [addr]:port; %s)", scheme, form)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return lock.Invalidf("%s URL: the host %q has no valid port (%s)", scheme, host, form)
	}
	return nil
}

// multiHost is a URL whose authority lists several host:port.
type multiHost struct {
	scheme     string // as written
	tls        bool   // a TLS scheme (tls.go)
	user, pass string
	hosts      []string
	path       string
	query      url.Values
}

// parseMultiHost splits scheme://[user[:password]@]host:port[,host:port...][/path][?query].
// The authority ends at the first '/', '?' or '#'; a password holding
// those must be percent-encoded.
func parseMultiHost(raw, scheme, form string) (multiHost, error) {
	var u multiHost
	s, rest, ok := strings.Cut(raw, "://")
	plain, secure := plainScheme(s)
	if !ok || plain != scheme {
		return u, lock.Invalidf("%s URL is malformed: expected %s", scheme, form)
	}
	u.scheme, u.tls = s, secure
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if strings.Contains(tail, "@") && !strings.Contains(authority, "@") {
		return u, lock.Invalidf("%s URL is malformed: percent-encode '/', '?', '#' and '@' in the user name or password (%s)", scheme, form)
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, pass, _ := strings.Cut(authority[:at], ":")
		authority = authority[at+1:]
		var err1, err2 error
		u.user, err1 = url.PathUnescape(user)
		u.pass, err2 = url.PathUnescape(pass)
		if err1 != nil || err2 != nil {
			return multiHost{}, lock.Invalidf("%s URL: the user name or password is not valid percent-encoding", scheme)
		}
	}
	for _, h := range strings.Split(authority, ",") {
		if err := checkHostPort(h, scheme, form); err != nil {
			return multiHost{}, err
		}
		u.hosts = append(u.hosts, h)
	}
	if i := strings.Index(tail, "#"); i >= 0 {
		tail = tail[:i]
	}
	path, q, _ := strings.Cut(tail, "?")
	u.path = path
	var err error
	if u.query, err = url.ParseQuery(q); err != nil {
		return multiHost{}, lock.Invalidf("%s URL: the query is malformed (%s)", scheme, form)
	}
	return u, nil
}
