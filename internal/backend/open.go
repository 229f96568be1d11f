// Package backend opens a lock engine by the scheme of its URL.
package backend

import (
	"cmp"
	"context"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/backend/etcd"
	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/backend/mysql"
	"github.com/distlock/distlock/internal/backend/postgres"
	"github.com/distlock/distlock/internal/backend/redis"
	"github.com/distlock/distlock/internal/backend/zookeeper"
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
// default directory). Usage mistakes are lock.ErrInvalid; an engine that
// cannot be reached is lock.ErrUnavailable. Errors never hold the password.
func Open(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	if rawURL == "" {
		rawURL = "file://"
	}
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, lock.Invalidf("backend %q is not a URL: use file://DIR, redis://HOST:PORT, etcd://HOST:PORT, zk://HOST:PORT, postgres://… or mysql://…", Redact(rawURL))
	}
	switch strings.ToLower(scheme) {
	case "file":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, lock.Invalidf("backend URL %q is malformed: %v", Redact(rawURL), cleanURLError(err))
		}
		if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
			return nil, lock.Invalidf("backend URL %q names the host %q, not a directory: use file:///abs/path (three slashes) for a lock directory", Redact(rawURL), u.Host)
		}
		if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
			return nil, lock.Invalidf("backend URL %q is a relative path: use file:///abs/path (three slashes) for a lock directory", Redact(rawURL))
		}
		if opts.Doctor {
			b := file.OpenForDoctor(u.Path, opts.Prefix)
			b.SetLogger(opts.Log)
			return b, nil
		}
		b, err := file.Open(u.Path, opts.Prefix)
		if err != nil {
			return nil, err
		}
		b.SetLogger(opts.Log)
		return b, nil
	case "redis", "rediss", "redis+sentinel", "redis+cluster", "rediss+sentinel", "rediss+cluster":
		parse := redis.ParseURL
		switch strings.ToLower(scheme) {
		case "redis+sentinel", "rediss+sentinel":
			parse = redis.ParseSentinelURL
		case "redis+cluster", "rediss+cluster":
			parse = redis.ParseClusterURL
		}
		cfg, err := parse(rawURL)
		if err != nil {
			return nil, err
		}
		if cfg.Password == "" {
			cfg.Password = opts.Password
		}
		cfg.Prefix = opts.Prefix
		cfg.ConnectTimeout = opts.ConnectTimeout
		return redis.New(ctx, cfg)
	case "redlock", "redlocks":
		cfg, err := redis.ParseRedlockURL(rawURL)
		if err != nil {
			return nil, err
		}
		if cfg.Password == "" {
			cfg.Password = opts.Password
		}
		cfg.Prefix = opts.Prefix
		cfg.ConnectTimeout = opts.ConnectTimeout
		return redis.OpenRedlock(ctx, cfg)
	case "etcd", "etcds":
		cfg, err := etcd.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		if cfg.Password == "" {
			cfg.Password = opts.Password
		}
		cfg.Prefix = opts.Prefix
		cfg.DialTimeout = opts.ConnectTimeout
		cfg.CACert = cmp.Or(cfg.CACert, opts.EtcdCACert)
		cfg.Cert = cmp.Or(cfg.Cert, opts.EtcdCert)
		cfg.Key = cmp.Or(cfg.Key, opts.EtcdKey)
		return etcd.New(ctx, cfg)
	case "postgres", "postgresql":
		cfg, err := postgres.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		cfg.Password = opts.Password
		cfg.Prefix = opts.Prefix
		cfg.ConnectTimeout = opts.ConnectTimeout
		return postgres.New(ctx, cfg)
	case "mysql":
		cfg, err := mysql.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		cfg.Password = opts.Password
		cfg.Prefix = opts.Prefix
		cfg.ConnectTimeout = opts.ConnectTimeout
		return mysql.New(ctx, cfg)
	case "zk":
		cfg, err := zookeeper.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		cfg.Prefix = opts.Prefix
		cfg.ConnectTimeout = opts.ConnectTimeout
		return zookeeper.New(ctx, cfg)
	default:
		return nil, lock.Invalidf("backend scheme %q is not supported: use file://, redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster://, rediss+cluster://, redlock://, redlocks://, etcd://, etcds://, zk://, postgres://, postgresql:// or mysql://", scheme)
	}
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

// cleanURLError drops the URL from url.Parse's error, since it may hold a password.
func cleanURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// Describe is the redacted URL shown to users and children.
func Describe(rawURL string) string {
	if rawURL == "" {
		return "file://" + file.DefaultDir()
	}
	return Redact(rawURL)
}
