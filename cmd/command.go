package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// common is the part of a command's options that every command but run
// has: the global options, and -o, the output format.
type common struct {
	g      *globalOptions
	Output string
}

// options are a command's options struct: its common part, its own flags
// bound to its fields, and its run, given the command's arguments.
type options interface {
	base() *common
	output() outputFlag
	flags(c *cobra.Command)
	run(ctx context.Context, args []string) error
}

func (o *common) base() *common { return o }

// output is -o: text or json, unless the command's options say otherwise.
func (*common) output() outputFlag { return textOrJSON }

// flags binds a command's own flags: none, unless its options have some.
func (*common) flags(*cobra.Command) {}

// newCommand makes c, a command's help and arguments, the command of o:
// o gets the global options, -o (completed with the formats it takes)
// and o's own flags are bound to its fields, and c, once -o is checked, runs o with its context and
// arguments.
func newCommand(g *globalOptions, o options, c *cobra.Command) *cobra.Command {
	b, out := o.base(), o.output()
	b.g = g
	c.Flags().StringVarP(&b.Output, "output", "o", out.def, out.usage)
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(out.formats, cobra.ShellCompDirectiveNoFileComp))
	o.flags(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if err := out.check(b.Output); err != nil {
			return err
		}
		return o.run(cmd.Context(), args)
	}
	return c
}
