package redis

import (
	"crypto/tls"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// Config is what New needs: go-redis options parsed from the URL (Options
// for one server, Failover for Sentinel, Cluster for a cluster) plus
// distlock's own settings.
type Config struct {
	Options  *goredis.Options
	Failover *goredis.FailoverOptions
	Cluster  *goredis.ClusterOptions
	Masters  []*goredis.Options // Redlock's independent masters (OpenRedlock)
	Topology Topology
	// Wait is how many replicas must acknowledge every grant and renewal
	// (WAIT, see replicas.go); 0 does not wait.
	Wait           int
	Password       string // used when the URL has none
	Prefix         string
	ConnectTimeout time.Duration
	addr           string // "redis at host:port", for messages
}

// String names the deployment and shows none of the config's passwords
// (Password, and those in the go-redis options), so that no %v of a
// Config can print one.
func (c Config) String() string { return c.addr + " (prefix " + strconv.Quote(c.Prefix) + ")" }

// ParseURL parses redis:// and rediss:// URLs with go-redis's own parser
// (user, password, db number, query options). Errors never hold the user
// name or password (urlx.ParseBy).
func ParseURL(raw string) (Config, error) {
	opts, err := urlx.ParseBy(urlx.NetURL, raw, "redis", "redis://[user:password@]host:port[/db]", goredis.ParseURL)
	if err != nil {
		return Config{}, err
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

// How the multi-host URLs read: every host names its port (Sentinel's
// and a cluster node's differ from a server's), TLS by the scheme or the
// TLS parameters (parseTLS, below).
var (
	sentinelSpec = urlx.Spec{
		Name: "redis+sentinel", Scheme: "redis+sentinel", TLSScheme: "rediss+sentinel", Form: sentinelForm,
		Path: urlx.Name, PathNote: "the master",
		Params: append([]string{"db", "wait", "sentinel_user", "sentinel_password"}, tlsParams...),
	}
	clusterSpec = urlx.Spec{
		Name: "redis+cluster", Scheme: "redis+cluster", TLSScheme: "rediss+cluster", Form: clusterForm,
		Path: urlx.NoPath, PathNote: "a cluster has only database 0 (" + clusterForm + ")",
		Params:  tlsParams,
		Refused: map[string]string{"wait": "wait= is not supported on a cluster (only on redis+sentinel://): distlock does not wait for a cluster's replicas"},
	}
)

// ParseSentinelURL parses redis+sentinel:// URLs: the sentinels' addresses,
// the name of the master they watch, the database number, and wait (the
// replicas that must acknowledge every grant and renewal, see replicas.go).
// The user and password are the data nodes' (the sentinels' own, if they
// need one: sentinel_user, sentinel_password). Errors never hold the
// password.
func ParseSentinelURL(raw string) (Config, error) {
	u, tlsCfg, err := parseTLS(raw, sentinelSpec)
	if err != nil {
		return Config{}, err
	}
	fo := &goredis.FailoverOptions{MasterName: u.Path, SentinelAddrs: u.Hosts, Username: u.User, Password: u.Password, TLSConfig: tlsCfg}
	cfg := Config{Failover: fo, Password: u.Password, Topology: Sentinel,
		addr: "redis sentinel master " + u.Path + " (sentinels " + strings.Join(u.Hosts, ",") + ")"}
	for k, vs := range u.Query {
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
		}
	}
	return cfg, nil
}

// ParseClusterURL parses redis+cluster:// URLs: some of the cluster's
// nodes (the client learns the rest from them). Errors never hold the
// password.
func ParseClusterURL(raw string) (Config, error) {
	u, tlsCfg, err := parseTLS(raw, clusterSpec)
	if err != nil {
		return Config{}, err
	}
	return Config{Cluster: &goredis.ClusterOptions{Addrs: u.Hosts, Username: u.User, Password: u.Password, TLSConfig: tlsCfg},
		Password: u.Password, Topology: Cluster, addr: "redis cluster at " + strings.Join(u.Hosts, ",")}, nil
}

// TLS for the multi-host URLs (redis+sentinel://, redis+cluster://,
// redlock://), as rediss:// is for one server: a TLS scheme
// (rediss+sentinel://, rediss+cluster://, redlocks://) or tls=true turns it
// on, and these parameters tune it:
//
//	tls=true|false             TLS to every node (and sentinel)
//	tls_ca=FILE                PEM CA bundle to verify the servers (default: the system's)
//	tls_server_name=NAME       the name to verify instead of each node's host
//	tls_insecure_skip_verify=true   do not verify the servers (testing only)
//
// Each node's certificate is verified against its own host unless
// tls_server_name is set (crypto/tls infers it from the address dialed).

// tlsParams are the query parameters parseTLS takes.
var tlsParams = []string{"tls", "tls_ca", "tls_server_name", "tls_insecure_skip_verify"}

// parseTLS parses raw by spec and takes the TLS parameters out of its
// query: the TLS configuration they and the scheme ask for (nil: plain
// TCP).
func parseTLS(raw string, spec urlx.Spec) (urlx.URL, *tls.Config, error) {
	u, err := urlx.Parse(raw, spec)
	if err != nil {
		return u, nil, err
	}
	on := u.TLS
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	tuned := false
	for k, vs := range u.Query {
		v := vs[len(vs)-1]
		switch k {
		case "tls", "tls_insecure_skip_verify":
			b, err := strconv.ParseBool(v)
			switch {
			case err != nil:
				return u, nil, lock.Invalidf("%s URL: %s=%q is not true or false", spec.Name, k, v)
			case k == "tls_insecure_skip_verify":
				cfg.InsecureSkipVerify, tuned = b, true
			case !b && u.TLS:
				return u, nil, lock.Invalidf("%s URL: tls=false contradicts the TLS scheme %s://", spec.Name, u.Scheme)
			default:
				on = b
			}
		case "tls_ca":
			if cfg.RootCAs, err = urlx.CAPool(v, spec.Name+" URL: cannot read tls_ca: %v", spec.Name+" URL: tls_ca %s holds no PEM certificate"); err != nil {
				return u, nil, err
			}
			tuned = true
		case "tls_server_name":
			cfg.ServerName, tuned = v, true
		default:
			continue
		}
		delete(u.Query, k)
	}
	if tuned && !on {
		return u, nil, lock.Invalidf("%s URL: TLS parameters without TLS: add tls=true or use the TLS scheme (rediss+sentinel://, rediss+cluster://, redlocks://)", spec.Name)
	}
	if !on {
		return u, nil, nil
	}
	return u, cfg, nil
}
