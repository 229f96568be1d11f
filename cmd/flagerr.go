package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distlock/distlock/internal/lock"
)

// noArgs refuses arguments to the command name, which takes only flags.
func noArgs(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 0 {
			return errors.New(name + " takes no arguments")
		}
		return nil
	}
}

// flagError turns pflag's parse errors into usage errors that say what to
// write: every duration flag gets the same clear line (not Go's "time:
// missing unit"), and an unknown flag a suggestion when one is close.
func flagError(c *cobra.Command, err error) error {
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) && inv.GetFlag().Value.Type() == "duration" {
		return lock.Invalidf("%s", durationHint("--"+inv.GetFlag().Name, inv.GetValue()))
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) && ne.GetSpecifiedShortnames() == "" {
		if s := closeFlags(c, ne.GetSpecifiedName()); len(s) > 0 {
			return usageError(fmt.Errorf("%w; did you mean %s?", err, strings.Join(s, " or ")))
		}
	}
	return usageError(err)
}

// durationHint is the one line for a duration flag given something that
// is not a duration; --wait (which also takes "forever") says the same.
func durationHint(flag, value string) string {
	return fmt.Sprintf("%s must be a duration such as 30s or 10m; got %q", flag, value)
}

// closeFlags are the flags of c (its own and inherited) whose names are
// within two edits of name, or start with it, as --name.
func closeFlags(c *cobra.Command, name string) []string {
	var out []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if seen[f.Name] || f.Hidden {
			return
		}
		seen[f.Name] = true
		if editDistance(f.Name, name) <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			out = append(out, "--"+f.Name)
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
