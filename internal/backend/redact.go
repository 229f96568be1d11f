package backend

import (
	"net/url"
	"strings"

	"github.com/distlock/distlock/internal/backend/urlx"
)

// Redact replaces the password in a URL (and any password-like query
// parameter) with "xxxxx": url.URL.Redacted does the userinfo. It works on
// malformed URLs too, since those are exactly the ones that end up in
// error messages, on those whose user-info net/url cannot find
// (urlx.NetURL.Ambiguous: pgx takes "postgres://u:12?pw@h/db" whole), and
// on a backend that is not a URL ("user:pw@host", the scheme forgotten).
func Redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && strings.Contains(raw, "://") && !urlx.NetURL.Ambiguous(raw) {
		q := u.Query()
		secretQuery := false
		for k := range q {
			if isSecretParam(k) {
				q.Set(k, "xxxxx")
				secretQuery = true
			}
		}
		if secretQuery {
			u.RawQuery = q.Encode()
		} else if _, hasPassword := u.User.Password(); !hasPassword {
			return raw // unchanged: Redacted would reorder the query
		}
		return u.Redacted()
	}
	return urlx.BlankSecretParams(redactUserinfo(raw))
}

// redactUserinfo blanks, in a backend that is malformed or not a URL,
// everything between "://" and the last '@' after the first ':' (all
// before the last '@' when there is no "://").
func redactUserinfo(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "xxxxx" + raw[i:]
		}
		return raw
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo := rest[:at]
		if user, _, has := strings.Cut(userinfo, ":"); has {
			return scheme + "://" + user + ":xxxxx" + rest[at:]
		}
	}
	return raw
}

func isSecretParam(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "pass") || strings.Contains(k, "secret") || strings.Contains(k, "token")
}
