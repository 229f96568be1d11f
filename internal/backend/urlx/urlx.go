// Package urlx reads the engines' multi-host URLs,
//
//	scheme://[user[:password]@]host[:port][,host[:port]...][/path][?query]
//
// once for every engine that lists several servers in one URL (Redis
// Sentinel, Cluster and Redlock, etcd, ZooKeeper, Consul): the scheme and
// its TLS twin, the user and password (percent-encoded), each host with
// the engine's default port, the path and the query. An engine says how it
// reads them in a Spec and gives meaning to what comes back. Errors are
// lock.ErrInvalid, one line, and never hold the password: at most a host
// is echoed, since with a forgotten "@host" user:password reads as
// host:port and what looks like a port is the password.
package urlx

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// Spec is how one engine reads its URLs.
type Spec struct {
	// Name begins the errors ("etcd" → "etcd URL ...").
	Name string
	// Scheme is the plain scheme ("etcd"), TLSScheme its TLS twin
	// ("etcds"; "" when there is none). Either matches in any case.
	Scheme, TLSScheme string
	// Form is the URL's shape, shown by the errors.
	Form string
	// Port is the default port of a host given without one ("" = every
	// host must name its port); TLSPort the default under TLSScheme
	// ("" = Port).
	Port, TLSPort string
	// BareIPv6: a host may be an IPv6 address without brackets (and then
	// without a port): etcd://fe80::1.
	BareIPv6 bool
	// PlainHosts refuses host names holding spaces, '\' or '%' (so an
	// IPv6 zone too), as etcd always has; other engines take a zone.
	PlainHosts bool
	// NoUser: the URL takes no user name or password.
	NoUser bool
	// Path is what the path is; PathNote says why there is none (NoPath)
	// or what the name names (Name: "the master").
	Path     Path
	PathNote string
	// Params are the query's keys (none: the URL takes no query);
	// Refused are keys refused with a reason of their own.
	Params  []string
	Refused map[string]string
	// NoFragment refuses a '#fragment' (otherwise it is ignored).
	NoFragment bool
}

// Path is what a URL's path means to an engine.
type Path int

const (
	// NoPath: nothing but slashes (etcd, Redis Cluster, Redlock).
	NoPath Path = iota
	// Name: one name, required (a Sentinel's master).
	Name
	// Nodes: a path of names under which the engine lives (ZooKeeper's
	// chroot, a key prefix), perhaps empty.
	Nodes
)

// URL is a parsed multi-host URL.
type URL struct {
	// Scheme is the scheme in lower case; TLS whether it is the TLS twin.
	Scheme string
	TLS    bool
	// User and Password, percent-decoded ("" when absent).
	User, Password string
	// Hosts are "host:port", the default port added, IPv6 in brackets.
	Hosts []string
	// Path: NoPath "", Name the name, Nodes the names joined by '/'
	// without a leading or trailing one ("apps/ci").
	Path string
	// Query holds only the Spec's Params.
	Query url.Values
}

// Parse reads raw as spec says.
func Parse(raw string, spec Spec) (URL, error) {
	var u URL
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return URL{}, spec.invalid(" has no scheme: use %s", spec.Form)
	}
	if err := u.setScheme(scheme, spec); err != nil {
		return URL{}, err
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	authority, err := u.takeUserinfo(authority, tail, spec)
	if err != nil {
		return URL{}, err
	}
	if u.Hosts, err = spec.hosts(authority, u.TLS); err != nil {
		return URL{}, err
	}
	if err := u.takeTail(tail, spec); err != nil {
		return URL{}, err
	}
	return u, nil
}

// setScheme checks the scheme against the spec's two.
func (u *URL) setScheme(scheme string, spec Spec) error {
	u.Scheme = strings.ToLower(scheme)
	switch {
	case u.Scheme == spec.Scheme:
	case spec.TLSScheme != "" && u.Scheme == spec.TLSScheme:
		u.TLS = true
	case spec.TLSScheme != "":
		return spec.invalid(" scheme is not %s:// or %s://: use %s", spec.Scheme, spec.TLSScheme, spec.Form)
	default:
		return spec.invalid(" scheme is not %s://: use %s", spec.Scheme, spec.Form)
	}
	return nil
}

// takeUserinfo sets the user and password from the authority's
// "user[:password]@" and returns the host list after it. The authority
// ends at the first '/', '?' or '#', so a password holding one of those
// must be percent-encoded; an '@' after the authority says it was not
// (NetURL.Ambiguous, userinfo.go).
func (u *URL) takeUserinfo(authority, tail string, spec Spec) (string, error) {
	at := strings.LastIndex(authority, "@")
	switch {
	case spec.NoUser && (at >= 0 || strings.Contains(tail, "@")):
		return "", spec.invalid(" takes no user name or password: use %s", spec.Form)
	case at < 0 && strings.Contains(tail, "@"):
		return "", spec.invalid(" is malformed: %s (%s)", Unencoded, spec.Form)
	case at < 0:
		return authority, nil
	}
	user, pass, _ := strings.Cut(authority[:at], ":")
	var err error
	if u.User, err = url.PathUnescape(user); err != nil {
		return "", spec.invalid(": the user name is not valid percent-encoding")
	}
	if u.Password, err = url.PathUnescape(pass); err != nil {
		return "", spec.invalid(": the password is not valid percent-encoding")
	}
	return authority[at+1:], nil
}

// takeTail reads what follows the authority: the path, the query and the
// fragment. A '?' inside the fragment is refused rather than read either
// way: some would take it for the query, RFC 3986 for the fragment.
func (u *URL) takeTail(tail string, spec Spec) error {
	tail, fragment, hasFragment := strings.Cut(tail, "#")
	switch {
	case hasFragment && spec.NoFragment:
		return spec.invalid(" takes no #fragment: use %s", spec.Form)
	case strings.Contains(fragment, "?"):
		return spec.invalid(" has a '?' after its '#': put the query before any fragment (%s)", spec.Form)
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if err := u.setPath(path, spec); err != nil {
		return err
	}
	if hasQuery && len(spec.Params) == 0 {
		return spec.invalid(" takes no query: use %s", spec.Form)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return spec.invalid(": the query is malformed (%s)", spec.Form)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if why, ok := spec.Refused[k]; ok {
			return spec.invalid(": %s", why)
		}
		if !slices.Contains(spec.Params, k) {
			return spec.invalid(": unknown parameter %q: it takes no parameters but %s (%s)", k, strings.Join(spec.Params, ", "), spec.Form)
		}
	}
	u.Query = q
	return nil
}

// setPath reads the path as the spec's Path says.
func (u *URL) setPath(path string, spec Spec) error {
	trimmed := strings.Trim(path, "/")
	switch spec.Path {
	case NoPath:
		if trimmed != "" {
			return spec.invalid(" has a path: it takes none (%s)", spec.PathNote)
		}
	case Name:
		if trimmed == "" || strings.Contains(trimmed, "/") {
			return spec.invalid(" must name %s after the hosts: %s", spec.PathNote, spec.Form)
		}
		u.Path = trimmed
	case Nodes:
		u.Path = strings.TrimRight(strings.TrimPrefix(path, "/"), "/")
	}
	return nil
}

// invalid is an error about a URL of the spec's engine.
func (spec Spec) invalid(format string, args ...any) error {
	return lock.Invalidf("%s URL"+format, append([]any{spec.Name}, args...)...)
}

// Cause is err without the *url.Error around it (from url.Parse or a
// client library's URL parser), whose URL may hold a password.
func Cause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
