package urlx

import (
	"regexp"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// The one rule every engine's URL errors follow (Parse's, and those of a
// client library's parser: go-redis, net/url, pgx): they never quote the
// user name or password. Where an unescaped '/', '?', '#' or '@' in them
// leaves a parser unable to tell where they end (Ambiguous), the error is
// Unencoded, whatever the parser said; and a parser's own error is shown
// only as it reads the URL redacted (Reword), so that it cannot quote them.

// Unencoded is what is wrong with a URL whose user name or password holds
// an unescaped '/', '?', '#' or '@'.
const Unencoded = "percent-encode '/', '?', '#' and '@' in the user name or password"

// Reader is where a URL parser ends the user name and password.
type Reader struct {
	// Ends are the characters that end the authority (what follows
	// "://"): the user-info is in the authority or there is none.
	Ends string
	// FirstAt: the user-info ends at the authority's first '@' (libpq,
	// pgx), not at its last (net/url, go-redis, Parse).
	FirstAt bool
}

var (
	// NetURL reads as net/url does: Parse, go-redis, the file and MySQL
	// engines.
	NetURL = Reader{Ends: "/?#"}
	// LibPQ reads as libpq and pgx do: only a '/' ends the authority.
	LibPQ = Reader{Ends: "/", FirstAt: true}
)

// split cuts raw into its scheme, authority and what follows it (the
// tail); ok is false when raw has no "://".
func (r Reader) split(raw string) (scheme, authority, tail string, ok bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", "", "", false
	}
	if i := strings.IndexAny(rest, r.Ends); i >= 0 {
		return scheme, rest[:i], rest[i:], true
	}
	return scheme, rest, "", true
}

// at is the index of the '@' that ends the authority's user-info, -1 when
// there is none.
func (r Reader) at(authority string) int {
	if r.FirstAt {
		return strings.Index(authority, "@")
	}
	return strings.LastIndex(authority, "@")
}

// Ambiguous says whether the parser would end raw's user name or password
// elsewhere than where the user did: no '@' in the authority but one after
// it (a '/', '?' or '#' in them cut them short), or, for a FirstAt
// parser, two in the authority (an '@' in them). An '@' after the
// authority is the URL's own, not a cut-short password's, where it can
// only be: in a query parameter's value ("?user=svc@tenant") behind an
// authority whose ports are numbers, or behind no authority at all
// (file:///dir, postgres:///db?host=/socket) or "localhost" (file://).
// A password that a '?' cuts after digits and that then reads as a query
// parameter ("u:12?k=v@h") is not told apart.
func (r Reader) Ambiguous(raw string) bool {
	_, authority, tail, ok := r.split(raw)
	if !ok || authority == "" || strings.EqualFold(authority, "localhost") {
		return false
	}
	switch n := strings.Count(authority, "@"); {
	case n > 0:
		return r.FirstAt && n > 1
	case !strings.Contains(tail, "@"):
		return false
	}
	before, _, _ := strings.Cut(tail, "@")
	return oddPort(authority) || !inQueryValue(before)
}

// oddPort says whether a host of authority has a port that is not a
// number (a user name and the start of a password, read as host:port).
func oddPort(authority string) bool {
	for _, h := range strings.Split(authority, ",") {
		if portRedacted(h) != h {
			return true
		}
	}
	return false
}

// inQueryValue says whether the text before (a URL's, from the end of its
// authority) ends inside the value of a query parameter.
func inQueryValue(before string) bool {
	q := strings.Index(before, "?")
	if q < 0 {
		return false
	}
	param := before[q+1:]
	if i := strings.LastIndex(param, "&"); i >= 0 {
		param = param[i+1:]
	}
	return strings.Contains(param, "=")
}

// Check is Unencoded when raw is Ambiguous, else "".
func (r Reader) Check(raw string) string {
	if r.Ambiguous(raw) {
		return Unencoded
	}
	return ""
}

// Redacted is raw with its user-info replaced by "xxxxx" (and
// ":xxxxx" when it has a password) and every port of its host list that
// is not a number by "xxxxx": with "@host" forgotten, "user:password" reads
// as host:port.
func (r Reader) Redacted(raw string) string {
	scheme, authority, tail, ok := r.split(raw)
	if !ok {
		return raw
	}
	userinfo, hosts := "", authority
	if i := r.at(authority); i >= 0 {
		userinfo, hosts = "xxxxx@", authority[i+1:]
		if strings.Contains(authority[:i], ":") {
			userinfo = "xxxxx:xxxxx@"
		}
	}
	list := strings.Split(hosts, ",")
	for i, h := range list {
		list[i] = portRedacted(h)
	}
	return scheme + "://" + userinfo + strings.Join(list, ",") + tail
}

// portRedacted is h ("host[:port]", IPv6 in brackets) with everything
// after the host's first ':' replaced by "xxxxx" when that is not a port
// number.
func portRedacted(h string) string {
	start := 0
	if strings.HasPrefix(h, "[") {
		if j := strings.Index(h, "]"); j >= 0 {
			start = j + 1
		}
	}
	i := strings.Index(h[start:], ":")
	if i < 0 {
		return h
	}
	colon := start + i
	if port := h[colon+1:]; strings.Trim(port, "0123456789") == "" {
		return h
	}
	return h[:colon+1] + "xxxxx"
}

// Reword is what is wrong with raw, which parse refused, in words that
// never hold its user name or password: Unencoded when raw is Ambiguous
// or when parse takes raw redacted (the user name or password is what it
// refused), else the first line of what parse says of raw redacted.
func (r Reader) Reword(raw string, parse func(string) error) string {
	if r.Ambiguous(raw) {
		return Unencoded
	}
	err := parse(BlankSecretParams(r.Redacted(raw)))
	if err == nil {
		return Unencoded
	}
	// The library may quote what it read: a keyword string
	// ("host=db password=S") has no user-info to blank.
	return BlankSecretParams(lock.FirstLine(Cause(err)))
}

// secretParams finds a parameter whose name holds "pass", "secret" or
// "token" after '?', '&', ';' or a space (a query, or a libpq keyword
// string "host=db password=S"): its value is replaced whole, a quoted one
// ('s3 cret') to its closing quote, an unquoted one to the next space,
// '&', ';' or '"' (a library's quote of what it read ends there).
var secretParams = regexp.MustCompile(`(?i)(^|[?&;\s])([^=?&;\s]*(?:pass|secret|token)[^=?&;\s]*)=(?:'[^']*'?|[^&;\s"]*)`)

// BlankSecretParams is s with the value of every such parameter replaced
// by "xxxxx", for text that did not parse as a URL, or a library's error
// that may quote it.
func BlankSecretParams(s string) string { return secretParams.ReplaceAllString(s, "${1}${2}=xxxxx") }

// ParseBy parses raw with parse (a client library's parser, reading as r
// does) by the rule above: an Ambiguous raw is refused before parse sees
// it, and parse's own error is Reworded. The error is lock.ErrInvalid,
// "<name> URL is malformed: <why> (expected <form>)".
func ParseBy[T any](r Reader, raw, name, form string, parse func(string) (T, error)) (T, error) {
	why := r.Check(raw)
	if why == "" {
		v, err := parse(raw)
		if err == nil {
			return v, nil
		}
		why = r.Reword(raw, func(s string) error { _, err := parse(s); return err })
	}
	var zero T
	return zero, lock.Invalidf("%s URL is malformed: %s (expected %s)", name, why, form)
}
