package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// oldDirChecks runs doctor on the default directory and returns its
// old-dir checks.
func oldDirChecks(t *testing.T) []lock.Check {
	t.Helper()
	b, err := Open("", "distlock")
	if err != nil {
		t.Fatal(err)
	}
	var out []lock.Check
	for _, c := range b.Doctor(context.Background(), lock.DoctorRequest{Key: "doctor:t", TTL: 30 * time.Second, Timeout: time.Second}) {
		if c.Name == "old-dir" {
			out = append(out, c)
		}
	}
	return out
}

// An upgrade: older builds kept the default directory in
// $XDG_RUNTIME_DIR/distlock, or $TMPDIR/distlock-<uid>. doctor warns when
// one holds lock files, naming where locks live now; an empty one, or one
// that is today's default, is no warning.
func TestDoctorWarnsOfOlderDefaultDirs(t *testing.T) {
	root, xdg, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	setTmpRoot(t, root)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	t.Setenv("TMPDIR", tmp)
	oldXDG, oldTmp := filepath.Join(xdg, "distlock"), filepath.Join(tmp, fmt.Sprintf("distlock-%d", os.Getuid()))
	for _, d := range []string{oldXDG, oldTmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if c := oldDirChecks(t); len(c) != 0 {
		t.Fatalf("empty older directories: %+v; want no old-dir check", c)
	}
	for _, name := range []string{"distlock#a.lock", "distlock#a.json", "distlock#b.lock"} {
		os.WriteFile(filepath.Join(oldXDG, name), nil, 0o600)
	}
	os.WriteFile(filepath.Join(oldTmp, "distlock#c.lock"), nil, 0o600)
	checks := oldDirChecks(t)
	if len(checks) != 2 {
		t.Fatalf("old-dir checks: %+v; want one for each older directory", checks)
	}
	for i, want := range []struct{ dir, detail string }{
		{oldXDG, " holds 2 lock files: older distlock builds kept their locks there when XDG_RUNTIME_DIR was set"},
		{oldTmp, " holds 1 lock files: older distlock builds kept their locks there when TMPDIR was " + tmp},
	} {
		c := checks[i]
		if c.Status != lock.CheckWarning || !strings.HasPrefix(c.Detail, want.dir+want.detail) ||
			!strings.Contains(c.Detail, "this build keeps them in "+DefaultDir()) || !strings.HasSuffix(c.Fix, "then remove "+want.dir) {
			t.Errorf("check %d: %+v; want a warning starting %q", i, c, want.dir+want.detail)
		}
	}

	// TMPDIR=/tmp: the older directory is today's default, no warning.
	setTmpRoot(t, tmp)
	if c := oldDirChecks(t); len(c) != 1 || !strings.HasPrefix(c[0].Detail, oldXDG) {
		t.Errorf("TMPDIR's older directory is today's default: %+v; want only the XDG_RUNTIME_DIR warning", c)
	}
	// A directory the user names is the same for every build.
	b, _ := Open(root, "distlock")
	if c := b.olderDirChecks(); len(c) != 0 {
		t.Errorf("named directory: %+v; want no old-dir check", c)
	}
}
