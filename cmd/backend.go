package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
)

// backendURL is --backend, else DISTLOCK_BACKEND, else "" (the file engine).
func (g *globalOptions) backendURL() string {
	if g.Backend != "" {
		return g.Backend
	}
	return os.Getenv("DISTLOCK_BACKEND")
}

// validate checks the global flags (exit 64 on mistakes).
func (g *globalOptions) validate() error {
	if g.Prefix == "" {
		return lock.Invalidf("--prefix must not be empty")
	}
	if g.ConnectTimeout <= 0 {
		return lock.Invalidf("--connect-timeout must be positive, got %s", g.ConnectTimeout)
	}
	if g.LogFormat != "text" && g.LogFormat != "json" {
		return lock.Invalidf("--log-format must be text or json, got %q", g.LogFormat)
	}
	return nil
}

// open connects to the engine, bounded by --connect-timeout.
func (g *globalOptions) open(ctx context.Context) (lock.Backend, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	pw, err := backend.LoadPassword(g.PasswordFile)
	if err != nil {
		return nil, err
	}
	// The engines bound their own dial by --connect-timeout and then say
	// why they failed; the context is the backstop, a little later.
	ctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout+500*time.Millisecond)
	defer cancel()
	b, err := backend.Open(ctx, g.backendURL(), backend.Options{
		Prefix: g.Prefix, ConnectTimeout: g.ConnectTimeout, Password: pw,
		EtcdCACert: g.EtcdCACert, EtcdCert: g.EtcdCert, EtcdKey: g.EtcdKey,
	})
	if err != nil && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lock.ErrUnavailable) {
		// An engine whose own dial timeout lost the race with ours.
		err = &lock.UnavailableError{Msg: fmt.Sprintf("%s did not answer within --connect-timeout %s: check that it is up and reachable", g.describeBackend(), g.ConnectTimeout), Err: err}
	}
	if l, ok := b.(interface{ SetLogger(*slog.Logger) }); ok && err == nil {
		l.SetLogger(g.logger()) // the file engine's leases warn on stderr
	}
	return b, err
}

// describeBackend is the redacted URL shown to users and children.
func (g *globalOptions) describeBackend() string { return backend.Describe(g.backendURL()) }

// logger logs to stderr: warnings always, the lease's life with -v.
func (g *globalOptions) logger() *slog.Logger {
	level := slog.LevelWarn
	if g.Verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if g.LogFormat == "json" {
		// Durations as "1.2ms", not nanosecond integers nobody can read.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}
