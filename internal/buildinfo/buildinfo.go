// Package buildinfo says which build of distlock is running.
//
// Release builds stamp Version, Commit and Date through the linker:
//
//	go build -ldflags "-X github.com/distlock/distlock/internal/buildinfo.Version=1.2.3 \
//	  -X github.com/distlock/distlock/internal/buildinfo.Commit=abc1234... \
//	  -X github.com/distlock/distlock/internal/buildinfo.Date=2026-11-21T10:00:00Z"
//
// A plain `go build` leaves Version as "dev". Then the commit and time are
// taken from the VCS stamp the go command embeds (vcs.revision, vcs.time,
// vcs.modified), when it embedded one; nothing is made up.
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
