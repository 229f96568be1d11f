// Package buildinfo says which build of distlock is running.
//
// Release builds stamp Version, Commit and Date through the linker:
//
//	go build -ldflags "-X github.com/distlock/distlock/internal/buildinfo.Version=1.2.3 \
//	  -X github.com/distlock/distlock/internal/buildinfo.Commit=abc1234... \
//	  -X github.com/distlock/distlock/internal/buildinfo.Date=2026-11-21T10:00:00Z"
//
// A binary built by `go install github.com/distlock/distlock@v1.2.3` (or
// any build of the module as a dependency) is not stamped, but the go
// command records the module's version in the build info (Main.Version):
// that version is used. A plain `go build` in a checkout records
// "(devel)" there, and Version stays "dev". A dev build takes the commit
// and time from the VCS stamp the go command embeds (vcs.revision,
// vcs.time, vcs.modified), when it embedded one; nothing is made up.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by -ldflags -X at release time. Must stay plain string variables
// (not constants, not initialised from function calls) for -X to work.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Info is what String prints, resolved once from the stamped variables,
// the embedded build info and the runtime.
type Info struct {
	Version string // "1.2.3" or "dev"
	Commit  string // full revision, may be empty
	Date    string // RFC 3339 build time (or commit time, see CommitTime), may be empty
	// CommitTime says Date is the commit's time from the VCS stamp of a dev
	// build, not the time the binary was built.
	CommitTime bool
	Modified   bool   // dev build from a working tree with uncommitted changes
	GoVersion  string // e.g. "go1.26.8"
	Platform   string // e.g. "linux/amd64"
}

// readBuildInfo is swapped out by tests.
var readBuildInfo = debug.ReadBuildInfo

// Get returns the build information of the running binary.
func Get() Info {
	info := Info{
		Version:   strings.TrimPrefix(Version, "v"),
		Commit:    Commit,
		Date:      Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if bi, ok := readBuildInfo(); ok {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "dev" {
			info.Version = moduleVersion(bi.Main.Version, hasVCS(bi))
		}
		// Only a dev build borrows the VCS stamp: a release build says
		// exactly what the release pipeline stamped into it.
		if info.Version == "dev" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					if info.Commit == "" {
						info.Commit = s.Value
					}
				case "vcs.time":
					if info.Date == "" {
						info.Date = s.Value
						info.CommitTime = true
					}
				case "vcs.modified":
					info.Modified = s.Value == "true"
				}
			}
		}
	}
	return info
}

// moduleVersion is the version the go command recorded for the main
// module, without its "v", for a build not stamped by -ldflags:
//
//   - a tagged version (go install ...@v1.2.3, or a build in a checkout at
//     that tag): that version;
//   - none, or "(devel)": "dev";
//   - a pseudo-version or a "+dirty" one, from a build in a checkout
//     (vcs says the VCS stamp is there): "dev", and the stamp names the
//     commit;
//   - a pseudo-version without a VCS stamp (go install ...@main): kept
//     whole, since it is the only record of the commit.
func moduleVersion(v string, vcs bool) string {
	switch {
	case v == "" || v == "(devel)":
		return "dev"
	case vcs && (strings.Contains(v, "+dirty") || isPseudo(v)):
		return "dev"
	}
	return strings.TrimPrefix(v, "v")
}

// isPseudo reports a Go pseudo-version: one ending (before any +build
// suffix) in a 14-digit time and a 12-hex-digit commit, as in
// v0.0.0-20261121100000-abc123def456 or v1.2.4-0.20261121100000-abc123def456.
func isPseudo(v string) bool {
	v, _, _ = strings.Cut(v, "+")
	rest, rev, ok := cutLast(v, "-")
	if !ok || len(rev) != 12 || strings.Trim(rev, "0123456789abcdef") != "" {
		return false
	}
	if len(rest) < 15 {
		return false
	}
	ts := rest[len(rest)-14:]
	sep := rest[len(rest)-15]
	return (sep == '-' || sep == '.') && strings.Trim(ts, "0123456789") == ""
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// hasVCS reports a VCS stamp in the build info.
func hasVCS(bi *debug.BuildInfo) bool {
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return true
		}
	}
	return false
}

// String renders the info as one line, for example
//
//	distlock 1.2.3 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 linux/amd64)
//	distlock dev (commit abc1234, modified, go1.26.8 linux/amd64)
//	distlock dev (go1.26.8 linux/amd64)
func (i Info) String() string {
	var parts []string
	if i.Commit != "" {
		c := "commit " + shortCommit(i.Commit)
		if i.Modified {
			c += ", modified"
		}
		parts = append(parts, c)
	}
	if i.Date != "" {
		if i.CommitTime {
			// vcs.time is when the commit was made, not when the binary
			// was built. Say so.
			parts = append(parts, "committed "+i.Date)
		} else {
			parts = append(parts, "built "+i.Date)
		}
	}
	parts = append(parts, strings.TrimSpace(i.GoVersion+" "+i.Platform))
	return fmt.Sprintf("distlock %s (%s)", i.Version, strings.Join(parts, ", "))
}

// String is Get().String(): the line `distlock version` and `--version` print.
func String() string { return Get().String() }

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}
