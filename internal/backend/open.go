// Package backend opens a lock engine by the scheme of its URL.
package backend

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// Options are the engine-neutral settings from flags and environment.
type Options struct {
	Prefix         string
	ConnectTimeout time.Duration
	Password       string // from DISTLOCK_PASSWORD or --password-file; the URL's wins
	// TLS files for etcds:// (--etcd-cacert, --etcd-cert, --etcd-key); the URL's win.
	EtcdCACert, EtcdCert, EtcdKey string
	// Log receives an engine's own warnings (the file engine's renewals
	// that cannot write their record); nil discards them.
	Log *slog.Logger
	// Doctor opens the engine for distlock doctor: a file directory that
	// cannot be created is reported by its checks instead of failing here.
	Doctor bool
}

// Open connects to the engine named by rawURL ("" = the file engine in its
// default directory), the one whose scheme it starts with (registry.go).
// Usage mistakes are lock.ErrInvalid; an engine that cannot be reached is
// lock.ErrUnavailable. Errors never hold the password.
func Open(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	e, rawURL, err := engineOf(rawURL)
	if err != nil {
		return nil, err
	}
	return e.open(ctx, rawURL, opts)
}

// engineOf is the engine whose scheme rawURL starts with, and rawURL
// ("file://" for "").
func engineOf(rawURL string) (Engine, string, error) {
	if rawURL == "" {
		rawURL = "file://"
	}
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok {
		return Engine{}, "", notURL(rawURL)
	}
	e, ok := Lookup(scheme)
	if !ok {
		return Engine{}, "", unsupported(scheme)
	}
	return e, rawURL, nil
}

// LoadPassword returns the password from --password-file (first line) or
// DISTLOCK_PASSWORD; the file wins when both are set.
func LoadPassword(passwordFile string) (string, error) {
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return "", lock.Invalidf("cannot read --password-file: %v", err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(pw, "\r"), nil
	}
	return os.Getenv("DISTLOCK_PASSWORD"), nil
}

// Describe is the redacted URL shown to users and children.
func Describe(rawURL string) string {
	if rawURL == "" {
		return "file://" + file.DefaultDir()
	}
	return Redact(rawURL)
}

// openFile opens file:///DIR (file:// alone: the default directory).
func openFile(_ context.Context, rawURL string, opts Options) (lock.Backend, error) {
	dir, err := fileDir(rawURL)
	if err != nil {
		return nil, err
	}
	open := file.Open
	if opts.Doctor {
		open = func(dir, prefix string) (*file.Backend, error) { return file.OpenForDoctor(dir, prefix), nil }
	}
	b, err := open(dir, opts.Prefix)
	if err != nil {
		return nil, err
	}
	b.SetLogger(opts.Log)
	return b, nil
}

// fileDir is the directory of file:///DIR ("" for file://). Its errors
// never hold a user name or password (urlx's rule: urlx.NetURL): they
// show the URL redacted, its user-info too.
func fileDir(rawURL string) (string, error) {
	shown := Redact(urlx.NetURL.Redacted(rawURL))
	if why := urlx.NetURL.Check(rawURL); why != "" {
		return "", lock.Invalidf("backend URL is malformed: %s (use file:///abs/path for a lock directory)", why)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		why := urlx.NetURL.Reword(rawURL, func(s string) error { _, err := url.Parse(s); return err })
		return "", lock.Invalidf("backend URL %q is malformed: %s", shown, why)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", lock.Invalidf("backend URL %q names the host %q, not a directory: use file:///abs/path (three slashes) for a lock directory", shown, u.Host)
	}
	if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		return "", lock.Invalidf("backend URL %q is a relative path: use file:///abs/path (three slashes) for a lock directory", shown)
	}
	return u.Path, nil
}
