package consul

import (
	"cmp"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/backend/urlx"
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
	// TLS selects https (consuls://), with the TLS files.
	TLS bool
	urlx.TLSFiles
	// Path is the URL's path: a KV prefix under which Prefix lives.
	Path string
	// Prefix namespaces the lock keys ("distlock" when empty).
	Prefix string
	// ConnectTimeout bounds New's check (5 s when zero).
	ConnectTimeout time.Duration
}

// String shows the config without its ACL token, so that no %v of a
// Config can print the secret.
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

// urlForm is the shape of a Consul URL, for the errors that show it.
const urlForm = "consul://[:TOKEN@]host:port[,host:port...][/PATH][?cacert=FILE&cert=FILE&key=FILE]"

// root is the KV prefix of every key distlock writes.
func (c Config) root() string {
	p := cmp.Or(strings.Trim(c.Prefix, "/"), DefaultPrefix)
	if path := strings.Trim(c.Path, "/"); path != "" {
		return path + "/" + p
	}
	return p
}

// apiConfig is the official client's configuration for one server. The
// client reads CONSUL_HTTP_TOKEN itself; a token given to distlock wins.
func (c Config) apiConfig(addr string) *api.Config {
	cfg := api.DefaultConfig()
	cfg.Address, cfg.Scheme, cfg.Token = addr, "http", cmp.Or(c.Token, cfg.Token)
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
	u, err := urlx.Parse(raw, urlSpec)
	if err != nil {
		return Config{}, err
	}
	if u.User != "" {
		return Config{}, lock.Invalidf("consul URL: put the ACL token where a password goes, after a colon: consul://:TOKEN@host:port")
	}
	path, err := url.PathUnescape(u.Path)
	if err != nil || strings.Contains(path, "//") {
		return Config{}, lock.Invalidf("consul URL path is not a KV prefix (segments separated by single '/')")
	}
	files, err := u.TLSFiles(urlSpec)
	if err != nil {
		return Config{}, err
	}
	return Config{Addrs: u.Hosts, Token: u.Password, TLS: u.TLS, Path: path, TLSFiles: files}, nil
}

// urlSpec is how Consul reads its URLs: agents or servers of one
// datacenter, a bare IPv6 address allowed, plain host names, the path a
// KV prefix, TLS files as parameters.
var urlSpec = urlx.Spec{
	Name: "consul", Scheme: "consul", TLSScheme: "consuls", Form: urlForm,
	Port: "8500", TLSPort: "8501", BareIPv6: true, PlainHosts: true, // the HTTP and HTTPS APIs
	Path: urlx.Nodes, Params: []string{"cacert", "cert", "key"},
}
