package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distlock/distlock/internal/lock"
)

// completeKeys completes KEY arguments from the locks held now. It is
// bounded by --connect-timeout, and never prints an error into the user's
// shell: whatever goes wrong, it offers no keys (and no file names).
// maxArgs < 0 means any number of keys (already given keys are skipped).
func completeKeys(g *globalOptions, maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if maxArgs >= 0 && len(args) >= maxArgs {
			return nil, none
		}
		if g.applyEnv(cmd.Root()) != nil || g.validate() != nil {
			return nil, none
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), g.ConnectTimeout)
		defer cancel()
		type result struct {
			hs []lock.Holder
			ok bool
		}
		done := make(chan result, 1)
		go func() { // a stuck engine call must not outlast the timeout
			b, err := g.open(ctx)
			if err != nil {
				done <- result{}
				return
			}
			defer b.Close()
			hs, err := g.list(ctx, b, toComplete)
			done <- result{hs, err == nil}
		}()
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
		}
		if !r.ok {
			return nil, none
		}
		given := map[string]bool{}
		for _, a := range args {
			given[a] = true
		}
		now := time.Now()
		var out []cobra.Completion
		for _, h := range r.hs {
			if !given[h.Key] {
				out = append(out, cobra.CompletionWithDesc(h.Key, printable(lock.DescribeHolder(h, now))))
			}
		}
		return out, none
	}
}

// completeFlagValues registers the completions of flag values on c and
// every command under it: --backend schemes, --log-format formats, and
// --wait's forever (-o's formats are each command's own: newCommand).
func completeFlagValues(c *cobra.Command) {
	fixed := func(values ...cobra.Completion) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	byFlag := map[string]cobra.CompletionFunc{
		"backend": func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return backendCompletions(), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		},
		"log-format": fixed("text", "json"),
		"wait": fixed(cobra.CompletionWithDesc("forever", "wait until the lock is free"),
			cobra.CompletionWithDesc("0", "try once (the default)"),
			cobra.CompletionWithDesc("30s", "a duration"), cobra.CompletionWithDesc("10m", "a duration")),
	}
	register := func(cmd *cobra.Command, fs *pflag.FlagSet) {
		fs.VisitAll(func(f *pflag.Flag) {
			if fn, ok := byFlag[f.Name]; ok {
				_ = cmd.RegisterFlagCompletionFunc(f.Name, fn) // a second registration is refused: harmless
			}
		})
	}
	register(c, c.PersistentFlags())
	register(c, c.LocalNonPersistentFlags())
	for _, sub := range c.Commands() {
		completeFlagValues(sub)
	}
}

// shellArgs makes "distlock completion SHELL" with a SHELL it has no script
// for a usage error: cobra's completion command runs nothing, so it showed
// its help and exited 0. Without a SHELL it still shows its help.
func shellArgs(root *cobra.Command) {
	c, _, err := root.Find([]string{"completion"})
	if err != nil || c == root {
		return
	}
	var shells []string
	for _, s := range c.Commands() {
		shells = append(shells, s.Name())
	}
	c.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("no completion script for shell %q: name one of %s", args[0], strings.Join(shells, ", "))
		}
		return nil
	}
	c.Use = "completion SHELL"
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}
