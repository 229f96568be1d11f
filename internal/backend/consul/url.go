package consul

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Config is what New needs. ParseURL fills the connection part from a
// consul:// or consuls:// URL; the opener fills Prefix, ConnectTimeout
// and, when the URL had none, Token.
type Config struct {
	// Addrs are "host:port" HTTP addresses of agents or servers of one
	// datacenter; requests go to one, and to the next when it does not
	// answer.
	Addrs []string
	// Token is the ACL token ("" = the agent's default).
	Token string
	// TLS selects https (consuls://). CACert, Cert and Key are PEM file
	// paths; CACert empty means the system roots, Cert and Key (both or
	// neither) are the client certificate.
	TLS               bool
	CACert, Cert, Key string
	// Path is the URL's path: a KV prefix under which Prefix lives.
	Path string
	// Prefix namespaces the lock keys ("distlock" when empty).
	Prefix string
	// ConnectTimeout bounds New's check (5 s when zero).
	ConnectTimeout time.Duration
}

// urlForm is the shape of a Consul URL, for the errors that show it.
const urlForm = "consul://[:TOKEN@]host:port[,host:port...][/PATH][?cacert=FILE&cert=FILE&key=FILE]"

// Default ports: Consul's HTTP and HTTPS APIs.
const (
	DefaultPort    = "8500"
	DefaultTLSPort = "8501"
)

// String describes the configuration as a URL, without the token.
func (c Config) String() string {
	s := "consul://"
	if c.TLS {
		s = "consuls://"
	}
	if c.Token != "" {
		s += ":xxxxx@"
	}
	return s + strings.Join(c.Addrs, ",") + "/" + c.Path
}

// root is the KV prefix of every key distlock writes.
func (c Config) root() string {
	p := strings.Trim(c.Prefix, "/")
	if p == "" {
		p = DefaultPrefix
	}
	if path := strings.Trim(c.Path, "/"); path != "" {
		return path + "/" + p
	}
	return p
}

// apiConfig is the official client's configuration for one server. The
// client reads CONSUL_HTTP_TOKEN itself; a token given to distlock wins.
func (c Config) apiConfig(addr string) *api.Config {
	cfg := api.DefaultConfig()
	cfg.Address, cfg.Scheme = addr, "http"
	if c.Token != "" {
		cfg.Token = c.Token
	}
	if c.TLS {
		cfg.Scheme = "https"
		cfg.TLSConfig = api.TLSConfig{CAFile: c.CACert, CertFile: c.Cert, KeyFile: c.Key}
	}
	return cfg
}

// ParseURL parses
//
//	consul://[:TOKEN@]host[:port][,host[:port]...][/PATH][?cacert=FILE&cert=FILE&key=FILE]
//	consuls://...   (TLS)
//
// The ACL token goes where a URL's password goes, so that it is redacted
// wherever the URL is shown. Errors are lock.ErrInvalid and never hold it.
func ParseURL(raw string) (Config, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	tls, known := map[string]bool{"consul": false, "consuls": true}[strings.ToLower(scheme)]
	switch {
	case !ok:
		return Config{}, lock.Invalidf("consul URL has no scheme: use %s", urlForm)
	case !known:
		return Config{}, lock.Invalidf("consul URL scheme %q is not consul:// or consuls://", scheme)
	}
	// The authority ends at the first '/', '?' or '#'.
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	cfg := Config{TLS: tls}
	steps := []func() error{
		func() error { return cfg.parseAuthority(rest[:end], rest[end:]) },
		func() error { return cfg.parseTail(rest[end:]) },
		cfg.checkTLS,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// parseAuthority reads "[:TOKEN@]hosts"; tail is what follows it, where an
// '@' means a token with an unescaped '/', '?' or '#' (said without
// echoing any of it).
func (cfg *Config) parseAuthority(authority, tail string) error {
	if strings.Contains(tail, "@") && !strings.Contains(authority, "@") {
		return lock.Invalidf("consul URL is malformed: percent-encode '/', '?', '#' and '@' in the token (%s)", urlForm)
	}
	hosts, err := cfg.parseToken(authority)
	if err != nil {
		return err
	}
	return cfg.parseHosts(hosts)
}

// parseToken takes the token from ":TOKEN@" and returns the hosts after it.
func (cfg *Config) parseToken(authority string) (string, error) {
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return authority, nil
	}
	user, tok, hasTok := strings.Cut(authority[:at], ":")
	if !hasTok || user != "" {
		return "", lock.Invalidf("consul URL: put the ACL token where a password goes, after a colon: consul://:TOKEN@host:port")
	}
	var err error
	if cfg.Token, err = url.PathUnescape(tok); err != nil {
		return "", lock.Invalidf("consul URL: the token is not valid percent-encoding")
	}
	return authority[at+1:], nil
}

// parseHosts sets the addresses from "host[:port][,host[:port]...]".
func (cfg *Config) parseHosts(hosts string) error {
	if hosts == "" {
		return lock.Invalidf("consul URL names no host: use %s", urlForm)
	}
	port := DefaultPort
	if cfg.TLS {
		port = DefaultTLSPort
	}
	for _, h := range strings.Split(hosts, ",") {
		addr, err := normalizeAddr(h, port)
		if err != nil {
			return err
		}
		cfg.Addrs = append(cfg.Addrs, addr)
	}
	return nil
}

// parseTail reads the path (a KV prefix) and the TLS files.
func (cfg *Config) parseTail(tail string) error {
	tail, _, _ = strings.Cut(tail, "#")
	path, query, _ := strings.Cut(tail, "?")
	p, err := url.PathUnescape(strings.Trim(path, "/"))
	if err != nil || strings.Contains(p, "//") {
		return lock.Invalidf("consul URL path %q is not a KV prefix (segments separated by single '/')", path)
	}
	cfg.Path = p
	q, err := url.ParseQuery(query)
	if err != nil {
		return lock.Invalidf("consul URL query is malformed: use ?cacert=FILE&cert=FILE&key=FILE")
	}
	files := map[string]*string{"cacert": &cfg.CACert, "cert": &cfg.Cert, "key": &cfg.Key}
	for name, vals := range q {
		dst, known := files[name]
		switch {
		case !known:
			return lock.Invalidf("consul URL parameter %q is unknown: the parameters are cacert, cert and key", name)
		case len(vals) != 1 || vals[0] == "":
			return lock.Invalidf("consul URL parameter %q needs exactly one non-empty value", name)
		}
		*dst = vals[0]
	}
	return nil
}

// checkTLS validates the TLS file settings.
func (c *Config) checkTLS() error {
	if !c.TLS && (c.CACert != "" || c.Cert != "" || c.Key != "") {
		return lock.Invalidf("consul TLS files (cacert, cert, key) need TLS: use consuls:// instead of consul://")
	}
	if (c.Cert == "") != (c.Key == "") {
		return lock.Invalidf("consul client certificate needs both cert and key files")
	}
	return nil
}

// normalizeAddr checks one "host[:port]" and adds the default port. Its
// errors echo at most the host.
func normalizeAddr(h, defPort string) (string, error) {
	if h == "" {
		return "", lock.Invalidf("consul URL has an empty host in its host list (stray comma?)")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defPort
		if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
			return "", lock.Invalidf("consul URL has a server that is not host:port (write IPv6 addresses as [addr]:port)")
		}
	}
	if host == "" || strings.ContainsAny(host, " \t/\\%") {
		return "", lock.Invalidf("consul URL has a server with no valid host name")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", lock.Invalidf("consul server %s has an invalid port: want a number from 1 to 65535", host)
	}
	return net.JoinHostPort(host, port), nil
}
