package file

// Older builds picked the default lock directory from the environment:
// $XDG_RUNTIME_DIR/distlock when XDG_RUNTIME_DIR was set (login sessions),
// else $TMPDIR/distlock-<uid> (os.TempDir). This build always uses
// /tmp/distlock-<uid> (DefaultDir), so during an upgrade a run of an older
// build in one of those directories and a run of this build do not see
// each other. distlock doctor warns when one of them still holds lock
// files. A run does not look: a directory that merely exists says nothing
// about an older build running now (an emptied directory stays), and a
// warning on every run would fill cron's mail for as long as it stays.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// olderDir is a directory an older build may have used as its default.
type olderDir struct {
	dir, when string // the directory, and the environment that chose it
}

// olderDirs are the default directories older builds picked in this
// environment, other than today's default.
func olderDirs() []olderDir {
	var out []olderDir
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		out = append(out, olderDir{filepath.Join(d, "distlock"), "XDG_RUNTIME_DIR was set (" + d + ")"})
	}
	if d := os.Getenv("TMPDIR"); d != "" {
		out = append(out, olderDir{filepath.Join(d, fmt.Sprintf("distlock-%d", os.Getuid())), "TMPDIR was " + d + " and XDG_RUNTIME_DIR unset"})
	}
	now := filepath.Clean(DefaultDir())
	var kept []olderDir
	for _, o := range out {
		if filepath.Clean(o.dir) != now {
			kept = append(kept, o)
		}
	}
	return kept
}

// lockFileCount counts the lock files (*.lock) in dir; 0 when it cannot
// be read.
func lockFileCount(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".lock") {
			n++
		}
	}
	return n
}

// olderDirChecks warns of every older default directory that holds lock
// files, when this backend uses the default directory (a directory the
// user names is the same for every build). Nothing found: no check.
func (b *Backend) olderDirChecks() []lock.Check {
	if !b.picked {
		return nil
	}
	var checks []lock.Check
	for _, o := range olderDirs() {
		n := lockFileCount(o.dir)
		if n == 0 {
			continue
		}
		checks = append(checks, lock.Check{Name: "old-dir", Status: lock.CheckWarning,
			Detail: fmt.Sprintf("%s holds %d lock files: older distlock builds kept their locks there when %s; "+
				"this build keeps them in %s, whatever the environment, so a run of an older build and one of this build do not exclude each other",
				o.dir, n, o.when, b.dir),
			Fix: "upgrade every distlock on this machine and let the runs of older builds end, then remove " + o.dir})
	}
	return checks
}
