package etcd

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/distlock/distlock/internal/lock"
)

// DefaultPort is used for endpoints given without a port.
const DefaultPort = "2379"

// Config is what New needs. ParseURL fills the connection part from an
// etcd:// or etcds:// URL; the opener fills Prefix, DialTimeout and, when
// the URL had none, Password.
type Config struct {
	// Endpoints are "host:port" members of one cluster (no scheme).
	Endpoints []string
	// Username and Password authenticate against etcd's auth; both empty
	// means no auth (or client-certificate auth).
	Username, Password string
	// TLS selects https to every endpoint (etcds://). CACert, Cert and Key
	// are PEM file paths; CACert empty means the system roots, Cert and Key
	// (both or neither) are the client certificate.
	TLS               bool
	CACert, Cert, Key string
	// Prefix namespaces the lock keys ("distlock" when empty).
	Prefix string
	// DialTimeout bounds New's connection check and the clean-up requests
	// made on the way out of a failed wait (5s when zero).
	DialTimeout time.Duration

	// dialOptions are added to the gRPC client's (tests time faults by a
	// request with an interceptor).
	dialOptions []grpc.DialOption
}

// String describes the configuration as a URL, without the password, so
// that printing a Config (even with %+v) never shows it.
func (c Config) String() string {
	scheme := "etcd://"
	if c.TLS {
		scheme = "etcds://"
	}
	user := ""
	if c.Username != "" {
		user = url.PathEscape(c.Username)
		if c.Password != "" {
			user += ":xxxxx"
		}
		user += "@"
	}
	q := url.Values{}
	for k, v := range map[string]string{"cacert": c.CACert, "cert": c.Cert, "key": c.Key} {
		if v != "" {
			q.Set(k, v)
		}
	}
	s := scheme + user + strings.Join(c.Endpoints, ",")
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// ParseURL parses
//
//	etcd://[user[:password]@]host[:port][,host[:port]...][/][?cacert=FILE&cert=FILE&key=FILE]
//	etcds://...   (TLS)
//
// Several hosts are members of one cluster. User and password may be
// percent-encoded. Errors are lock.ErrInvalid and never hold the password.
func ParseURL(raw string) (Config, error) {
	const form = "etcd://[user[:password]@]host:port[,host:port...][?cacert=FILE&cert=FILE&key=FILE]"
	var cfg Config
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return cfg, lock.Invalidf("etcd URL has no scheme: use %s", form)
	}
	switch strings.ToLower(scheme) {
	case "etcd":
	case "etcds":
		cfg.TLS = true
	default:
		return cfg, lock.Invalidf("etcd URL scheme %q is not etcd:// or etcds://", scheme)
	}

	// The authority ends at the first '/', '?' or '#', as in any URL; a
	// password holding those characters must be percent-encoded.
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if strings.Contains(tail, "@") && !strings.Contains(authority, "@") {
		// Most likely a password with an unescaped '/', '?' or '#': say so
		// without echoing any part of it.
		return cfg, lock.Invalidf("etcd URL is malformed: percent-encode '/', '?', '#' and '@' in the user name or password (%s)", form)
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo := authority[:at]
		authority = authority[at+1:]
		user, pass, hasPass := strings.Cut(userinfo, ":")
		var err error
		if cfg.Username, err = url.PathUnescape(user); err != nil {
			return Config{}, lock.Invalidf("etcd URL: the user name is not valid percent-encoding")
		}
		if hasPass {
			if cfg.Password, err = url.PathUnescape(pass); err != nil {
				return Config{}, lock.Invalidf("etcd URL: the password is not valid percent-encoding")
			}
		}
		if cfg.Username == "" && cfg.Password != "" {
			return Config{}, lock.Invalidf("etcd URL has a password but no user name: use etcd://USER:PASSWORD@host:port")
		}
	}

	if authority == "" {
		return Config{}, lock.Invalidf("etcd URL names no host: use %s", form)
	}
	for _, ep := range strings.Split(authority, ",") {
		norm, err := normalizeEndpoint(ep)
		if err != nil {
			return Config{}, err
		}
		cfg.Endpoints = append(cfg.Endpoints, norm)
	}

	if err := cfg.parseTail(tail); err != nil {
		return Config{}, err
	}
	if err := cfg.checkTLS(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parseTail reads what follows the authority in an etcd URL: no path, and
// the query's TLS files (cacert, cert, key).
func (c *Config) parseTail(tail string) error {
	path, query, _ := strings.Cut(tail, "?")
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query = query[:i]
	}
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path = path[:i]
	}
	if path != "" && path != "/" {
		return lock.Invalidf("etcd URL has a path (%q); etcd URLs take none: set the key namespace with --prefix", path)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return lock.Invalidf("etcd URL query is malformed: use ?cacert=FILE&cert=FILE&key=FILE")
	}
	for name, vals := range q {
		if len(vals) != 1 || vals[0] == "" {
			return lock.Invalidf("etcd URL parameter %q needs exactly one non-empty value", name)
		}
		switch name {
		case "cacert":
			c.CACert = vals[0]
		case "cert":
			c.Cert = vals[0]
		case "key":
			c.Key = vals[0]
		default:
			return lock.Invalidf("etcd URL parameter %q is unknown: the parameters are cacert, cert and key", name)
		}
	}
	return nil
}

// checkTLS validates the TLS file settings (shared by ParseURL and New).
func (c Config) checkTLS() error {
	if !c.TLS && (c.CACert != "" || c.Cert != "" || c.Key != "") {
		return lock.Invalidf("etcd TLS files (cacert, cert, key) need TLS: use etcds:// instead of etcd://")
	}
	if (c.Cert == "") != (c.Key == "") {
		return lock.Invalidf("etcd client certificate needs both cert and key files")
	}
	return nil
}

// normalizeEndpoint checks one "host[:port]" and adds the default port.
// Its errors echo at most the host part: when a user forgets "@host", what
// looks like a port is really a password.
func normalizeEndpoint(ep string) (string, error) {
	if ep == "" {
		return "", lock.Invalidf("etcd URL has an empty host in its host list (stray comma?)")
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		// No port: "host" or "[v6]".
		h := ep
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		}
		if strings.ContainsAny(h, "[]") || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
			return "", lock.Invalidf("etcd URL has an endpoint that is not host:port (write IPv6 addresses as [addr]:port)")
		}
		host, port = h, DefaultPort
	}
	if host == "" {
		return "", lock.Invalidf("etcd URL has an endpoint with no host: use host:port")
	}
	if strings.ContainsAny(host, " \t/\\%") {
		return "", lock.Invalidf("etcd URL has an invalid host name %q", host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", lock.Invalidf("etcd endpoint %s has an invalid port: want a number from 1 to 65535", host)
	}
	return net.JoinHostPort(host, port), nil
}
