// Package cmd holds distlock's cobra commands. Commands are thin: they parse
// flags into an options struct, call the internal packages and return errors;
// exit.go maps errors to exit codes in one place.
package cmd

import (
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/child"
)

// globalOptions are the flags every command shares.
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
}

// NewRootCommand builds the whole command tree. It holds no global state, so
// tests and the docs generator can build as many trees as they need.
func NewRootCommand(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	g := &globalOptions{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "distlock",
		Short: "Run a command on at most one machine at a time",
		Long: `distlock runs a command while it holds a lease-based lock on a shared
engine (a local file directory, Redis or etcd), so that across many machines
at most one copy runs. A background renewer keeps the lease alive; if renewal
fails the command is stopped before the lease could pass to anyone else.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })

	pf := root.PersistentFlags()
	pf.StringVar(&g.Backend, "backend", "", "engine URL: file://DIR, redis://, rediss://, etcd://, etcds:// (env DISTLOCK_BACKEND; default file)")
	pf.StringVar(&g.Prefix, "prefix", "distlock", "namespace for keys on the engine")
	pf.DurationVar(&g.ConnectTimeout, "connect-timeout", 5*time.Second, "give up reaching the engine after this long (exit 69)")
	pf.StringVar(&g.PasswordFile, "password-file", "", "read the engine password from this file (or set DISTLOCK_PASSWORD)")
	pf.StringVar(&g.EtcdCACert, "etcd-cacert", "", "etcds://: CA certificate file to verify the servers")
	pf.StringVar(&g.EtcdCert, "etcd-cert", "", "etcds://: client certificate file")
	pf.StringVar(&g.EtcdKey, "etcd-key", "", "etcds://: client key file")
	pf.BoolVarP(&g.Verbose, "verbose", "v", false, "log acquire, renew, loss, child exit and release to stderr")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVar(&g.NoColor, "no-color", false, "never colour the output (also: NO_COLOR=1; colour is only used on a terminal)")

	root.AddCommand(
		newRunCommand(g),
		newStatusCommand(g),
		newBreakCommand(g),
		newListCommand(g),
		newVersionCommand(g),
		newAcquireCommand(g),
		newExtendCommand(g),
		newReleaseCommand(g),
	)
	setVersionFlag(root)
	return root
}

// Execute runs distlock with the process's arguments and returns its exit code.
func Execute() int {
	if len(os.Args) > 1 && os.Args[1] == child.WatchArg {
		return child.WatchMain(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == child.PinArg {
		return child.PinMain()
	}
	root := NewRootCommand(os.Stdin, os.Stdout, os.Stderr)
	return exitCode(root.Execute(), os.Stderr)
}
