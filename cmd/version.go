package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/buildinfo"
)

// newVersionCommand builds `distlock version`: one line with the version,
// commit, build date, Go version and platform, the same line --version prints.
func newVersionCommand(_ *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print distlock's version, commit, build date and Go version",
		Long: `Print one line naming this build of distlock: its version, the commit and
date it was built from, and the Go version and platform it was built with.
A build made with a plain "go build" calls itself "dev".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildinfo.String())
			return err
		},
	}
}

// setVersionFlag gives root a --version flag printing the same line as
// `distlock version`. cobra only adds the -v shorthand when it is free, so it
// does not clash with --verbose/-v.
func setVersionFlag(root *cobra.Command) {
	root.Version = buildinfo.String()
	root.SetVersionTemplate("{{.Version}}\n")
}
