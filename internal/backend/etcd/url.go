package etcd

import (
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// Config's defaults.
const (
	// DefaultPort is used for endpoints given without a port.
	DefaultPort = "2379"
	// DefaultPrefix namespaces lock keys when Config.Prefix is empty.
	DefaultPrefix = "distlock"
	// DefaultDialTimeout is used when Config.DialTimeout is zero.
	DefaultDialTimeout = 5 * time.Second
)

// Config is what New needs. ParseURL fills the connection part from an
// etcd:// or etcds:// URL; the opener fills Prefix, DialTimeout and, when
// the URL had none, Password.
type Config struct {
	// Endpoints are "host:port" members of one cluster (no scheme).
	Endpoints []string
	// Username and Password authenticate against etcd's auth; both empty
	// means no auth (or client-certificate auth).
	Username, Password string
	// TLS selects https to every endpoint (etcds://), with the TLS files.
	TLS bool
	urlx.TLSFiles
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
	s := "etcd://"
	if c.TLS {
		s = "etcds://"
	}
	if c.Username != "" {
		s += url.PathEscape(c.Username)
		if c.Password != "" {
			s += ":xxxxx"
		}
		s += "@"
	}
	s += strings.Join(c.Endpoints, ",")
	q := url.Values{}
	for k, v := range map[string]string{"cacert": c.CACert, "cert": c.Cert, "key": c.Key} {
		if v != "" {
			q.Set(k, v)
		}
	}
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
	u, err := urlx.Parse(raw, urlSpec)
	if err != nil {
		return Config{}, err
	}
	if u.User == "" && u.Password != "" {
		return Config{}, lock.Invalidf("etcd URL has a password but no user name: use etcd://USER:PASSWORD@host:port")
	}
	files, err := u.TLSFiles(urlSpec)
	if err != nil {
		return Config{}, err
	}
	return Config{Endpoints: u.Hosts, Username: u.User, Password: u.Password, TLS: u.TLS, TLSFiles: files}, nil
}

// urlSpec is how etcd reads its URLs: members of one cluster, a bare
// IPv6 address allowed, plain host names (no spaces, '\' or '%': no IPv6
// zone), no path (the key namespace is --prefix), TLS files as parameters.
var urlSpec = urlx.Spec{
	Name: "etcd", Scheme: "etcd", TLSScheme: "etcds", Form: urlForm,
	Port: DefaultPort, BareIPv6: true, PlainHosts: true,
	Path: urlx.NoPath, PathNote: "set the key namespace with --prefix",
	Params: []string{"cacert", "cert", "key"},
}

// urlForm is the shape of an etcd URL, for the errors that show it.
const urlForm = "etcd://[user[:password]@]host:port[,host:port...][?cacert=FILE&cert=FILE&key=FILE]"
