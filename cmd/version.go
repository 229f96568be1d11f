package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/buildinfo"
)

type versionOptions struct {
	common
}

func (*versionOptions) output() outputFlag { return textOrJSON }

// newVersionCommand builds `distlock version`: one line with the version,
// commit, build date, Go version and platform, the same line --version prints.
func newVersionCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &versionOptions{}, &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "Print distlock's version, commit, build date and Go version",
		Long: `Print one line naming this build of distlock: its version, the commit and
date it was built from, and the Go version and platform it was built with.
A release build says the version it was stamped with; one installed with
"go install github.com/distlock/distlock@VERSION" says that version; a
build in a checkout calls itself "dev". -o json prints the same as
{"version","commit","date","commit_time","modified","go","platform"}.`,
		Args: cobra.NoArgs,
	})
}

// versionJSON is what version prints with -o json. date is when the
// binary was built, or when its commit was made if commit_time is true
// (a dev build); commit and date are "" when unknown.
type versionJSON struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	Date       string `json:"date"`
	CommitTime bool   `json:"commit_time"`
	Modified   bool   `json:"modified"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

func (o *versionOptions) run(_ context.Context, _ []string) error {
	i := buildinfo.Get()
	if o.Output == outJSON {
		return writeJSON(o.g.stdout, versionJSON{
			Version: i.Version, Commit: i.Commit, Date: i.Date, CommitTime: i.CommitTime,
			Modified: i.Modified, Go: i.GoVersion, Platform: i.Platform,
		})
	}
	_, err := fmt.Fprintln(o.g.stdout, i.String())
	return err
}

// setVersionFlag gives root a --version flag printing the same line as
// `distlock version`. cobra only adds the -v shorthand when it is free, so it
// does not clash with --verbose/-v.
func setVersionFlag(root *cobra.Command) {
	root.Version = buildinfo.String()
	root.SetVersionTemplate("{{.Version}}\n")
}
