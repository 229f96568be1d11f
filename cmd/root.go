// Package cmd holds distlock's cobra commands. Commands are thin: they parse
// flags into an options struct, call the internal packages and return errors;
// exit.go maps errors to exit codes in one place.
package cmd

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/child"
)

// NewRootCommandWith builds the whole command tree on f (factory.go).
func NewRootCommandWith(f Factory) *cobra.Command {
	stdin, stdout, stderr := f.Stdin, f.Stdout, f.Stderr
	g := &globalOptions{stdin: stdin, stdout: stdout, stderr: stderr, dial: f.OpenEngine}
	root := &cobra.Command{
		Use:   "distlock",
		Short: "Run a command on at most one machine at a time",
		Long: strings.Join(wrapWords("distlock runs a command while it holds a lease-based lock on a shared engine ("+
			engineNames()+"), so that across many machines at most one copy runs. A background renewer keeps the lease "+
			"alive; if renewal fails the command is stopped before the lease could pass to anyone else.", helpWidth), "\n"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Every global flag has its DISTLOCK_* twin, read before any command
	// runs (completion reads them itself: it runs no hooks).
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return g.applyEnv(cmd.Root()) }
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	g.addFlags(root)

	root.AddCommand(
		newRunCommand(g),
		newStatusCommand(g),
		newBreakCommand(g),
		newListCommand(g),
		newVersionCommand(g),
		newAcquireCommand(g),
		newExtendCommand(g),
		newReleaseCommand(g),
		newDoctorCommand(g),
		newHistoryCommand(g),
	)
	setVersionFlag(root)

	// Every mistake in the command line is a usage error (exit 64): flags
	// here, arguments through each command's Args, cobra's own commands
	// (help, completion) included, and an unknown command in execute.
	root.SetFlagErrorFunc(flagError)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	shellArgs(root)
	completeFlagValues(root)
	argsAreUsage(root)
	return root
}

// argsAreUsage makes the argument check of c and every command under it
// return usage errors.
func argsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError(err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}

// execute runs the command line. cobra reports an unknown command as an
// error of root itself (root's Args stays nil so that cobra looks for
// subcommands). Root runs nothing: apart from its flags, already usage
// errors, and a failed write of --version's line, that is the only error
// it can return.
func execute(ctx context.Context, root *cobra.Command) error {
	c, err := root.ExecuteContextC(ctx)
	if err != nil && c == root {
		return usageError(err)
	}
	return err
}

// Execute runs distlock with the process's arguments and returns its exit
// code, having said on stderr what went wrong.
func Execute(ctx context.Context) int {
	if len(os.Args) > 1 && os.Args[1] == child.WatchArg {
		return child.WatchMain(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == child.PinArg {
		return child.PinMain()
	}
	return Run(ctx, Factory{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, OpenEngine: backend.Open}, os.Args[1:])
}
