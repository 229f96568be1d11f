package cmd

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
)

// globalOptions are the flags every command shares, and the process's
// standard streams. This file holds what is read from them; engine.go
// holds the engine access they configure.
type globalOptions struct {
	Backend        string
	Prefix         string
	ConnectTimeout time.Duration
	PasswordFile   string
	EtcdCACert     string
	EtcdCert       string
	EtcdKey        string
	Verbose        bool
	LogFormat      string
	NoColor        bool

	stdout, stderr io.Writer
	stdin          *os.File
	// dial is backend.Open, or a test's (Factory).
	dial func(ctx context.Context, url string, o backend.Options) (lock.Backend, error)
}

// addFlags defines the global flags on root, for every command.
func (g *globalOptions) addFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringVar(&g.Backend, "backend", "", backendFlagHelp())
	pf.StringVar(&g.Prefix, "prefix", "distlock", "namespace for keys on the engine")
	pf.DurationVar(&g.ConnectTimeout, "connect-timeout", 5*time.Second, "give up reaching the engine after this long (exit 69)")
	pf.StringVar(&g.PasswordFile, "password-file", "", "read the engine password from this file (or set DISTLOCK_PASSWORD)")
	pf.StringVar(&g.EtcdCACert, "etcd-cacert", "", "etcds://: CA certificate file to verify the servers")
	pf.StringVar(&g.EtcdCert, "etcd-cert", "", "etcds://: client certificate file")
	pf.StringVar(&g.EtcdKey, "etcd-key", "", "etcds://: client key file")
	pf.BoolVarP(&g.Verbose, "verbose", "v", false, "log acquire, renew, loss, child exit and release to stderr")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVar(&g.NoColor, "no-color", false, "never colour the output (also: NO_COLOR=1; colour is only used on a terminal)")
	pf.VisitAll(func(f *pflag.Flag) {
		if name := envName(f.Name); !strings.Contains(f.Usage, name) {
			f.Usage += " (env " + name + ")"
		}
	})
}

// envName is the environment variable twin of the global flag name:
// --connect-timeout is DISTLOCK_CONNECT_TIMEOUT.
func envName(flag string) string {
	return "DISTLOCK_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every global flag that the command line left alone from
// its DISTLOCK_* twin, when that is set and not empty: the command line
// wins over the environment, the environment over the defaults. A value
// that does not parse is a usage error naming the variable.
func (g *globalOptions) applyEnv(root *cobra.Command) error {
	var err error
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		name := envName(f.Name)
		v := os.Getenv(name)
		if err != nil || f.Changed || v == "" {
			return
		}
		if e := f.Value.Set(v); e != nil {
			if f.Value.Type() == "duration" {
				err = lock.Invalidf("%s", durationHint(name, v))
				return
			}
			err = lock.Invalidf("%s=%q is not valid for --%s: %v", name, v, f.Name, e)
		}
	})
	return err
}

// validate checks the global flags (exit 64 on mistakes).
func (g *globalOptions) validate() error {
	if err := lock.ValidatePrefix(g.Prefix); err != nil {
		return err
	}
	if g.ConnectTimeout <= 0 {
		return lock.Invalidf("--connect-timeout must be positive, got %s", g.ConnectTimeout)
	}
	if g.LogFormat != "text" && g.LogFormat != "json" {
		return lock.Invalidf("--log-format must be text or json, got %q", g.LogFormat)
	}
	return nil
}

// backendURL is --backend, else DISTLOCK_BACKEND, else "" (the file engine).
func (g *globalOptions) backendURL() string {
	if g.Backend != "" {
		return g.Backend
	}
	return os.Getenv("DISTLOCK_BACKEND")
}

// describeBackend is the redacted URL shown to users and children.
func (g *globalOptions) describeBackend() string { return backend.Describe(g.backendURL()) }

// logger logs to stderr: warnings always, the lease's life with -v.
func (g *globalOptions) logger() *slog.Logger {
	if g.Verbose {
		return g.newLogger(slog.LevelDebug)
	}
	return g.newLogger(slog.LevelWarn)
}

// waitLogger is the logger of a waiting run's progress lines: waiting is
// normal contention, logged at INFO (alerts on WARN must not fire on it),
// and shown without -v all the same.
func (g *globalOptions) waitLogger() *slog.Logger {
	if g.Verbose {
		return g.newLogger(slog.LevelDebug)
	}
	return g.newLogger(slog.LevelInfo)
}

// newLogger logs records of level and above to stderr in --log-format.
func (g *globalOptions) newLogger(level slog.Level) *slog.Logger {
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

// palette is the colours for stdout: on only on a terminal, and neither
// with --no-color, NO_COLOR nor TERM=dumb.
func (g *globalOptions) palette() palette {
	return newPalette(colorOn(g.NoColor, g.stdout))
}
