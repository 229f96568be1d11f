package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// stamp sets the ldflags variables and the embedded build info for one test.
func stamp(t *testing.T, version, commit, date string, bi *debug.BuildInfo) {
	t.Helper()
	oldV, oldC, oldD, oldR := Version, Commit, Date, readBuildInfo
	t.Cleanup(func() { Version, Commit, Date, readBuildInfo = oldV, oldC, oldD, oldR })
	Version, Commit, Date = version, commit, date
	readBuildInfo = func() (*debug.BuildInfo, bool) { return bi, bi != nil }
}

func TestString(t *testing.T) {
	const goVer = "go1.26.8"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := &debug.BuildInfo{GoVersion: goVer, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-20T09:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	tests := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{
			name:    "release stamped by ldflags",
			version: "1.2.3", commit: "abc1234def5678", date: "2026-11-21T10:00:00Z",
			bi:   &debug.BuildInfo{GoVersion: goVer},
			want: "distlock 1.2.3 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 " + platform + ")",
		},
		{
			name:    "leading v is dropped",
			version: "v1.2.3", commit: "abc1234", date: "2026-11-21T10:00:00Z",
			bi:   &debug.BuildInfo{GoVersion: goVer},
			want: "distlock 1.2.3 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 " + platform + ")",
		},
		{
			name:    "release ignores the vcs stamp",
			version: "1.2.3", commit: "abc1234", date: "2026-11-21T10:00:00Z",
			bi:   vcs,
			want: "distlock 1.2.3 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 " + platform + ")",
		},
		{
			name:    "dev with vcs stamp",
			version: "dev",
			bi:      vcs,
			want:    "distlock dev (commit 0123456, modified, committed 2026-11-20T09:00:00Z, go1.26.8 " + platform + ")",
		},
		{
			name:    "dev without vcs stamp",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: goVer},
			want:    "distlock dev (go1.26.8 " + platform + ")",
		},
		{
			name:    "go install of a tag: the module version",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: goVer, Main: debug.Module{Path: "github.com/distlock/distlock", Version: "v1.4.0"}},
			want:    "distlock 1.4.0 (go1.26.8 " + platform + ")",
		},
		{
			name:    "go install of a branch: the pseudo-version names the commit",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: goVer, Main: debug.Module{Version: "v1.4.1-0.20261121100000-abc123def456"}},
			want:    "distlock 1.4.1-0.20261121100000-abc123def456 (go1.26.8 " + platform + ")",
		},
		{
			name:    "build in a checkout: (devel) is dev",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: goVer, Main: debug.Module{Version: "(devel)"}},
			want:    "distlock dev (go1.26.8 " + platform + ")",
		},
		{
			name:    "build in a checkout off a tag: dev with the vcs stamp",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: goVer, Main: debug.Module{Version: "v0.0.0-20261120090000-0123456789ab+dirty"}, Settings: vcs.Settings},
			want:    "distlock dev (commit 0123456, modified, committed 2026-11-20T09:00:00Z, go1.26.8 " + platform + ")",
		},
		{
			name:    "build in a checkout at a tag: the tag",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: goVer, Main: debug.Module{Version: "v1.4.0"}, Settings: vcs.Settings[:2]},
			want:    "distlock 1.4.0 (go1.26.8 " + platform + ")",
		},
		{
			name:    "ldflags win over the module version",
			version: "1.2.3", commit: "abc1234", date: "2026-11-21T10:00:00Z",
			bi:   &debug.BuildInfo{GoVersion: goVer, Main: debug.Module{Version: "v9.9.9"}},
			want: "distlock 1.2.3 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 " + platform + ")",
		},
		{
			name:    "empty version counts as dev",
			version: "",
			bi:      &debug.BuildInfo{GoVersion: goVer},
			want:    "distlock dev (go1.26.8 " + platform + ")",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stamp(t, tt.version, tt.commit, tt.date, tt.bi)
			if got := String(); got != tt.want {
				t.Errorf("String() =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestStringWithoutBuildInfo(t *testing.T) {
	stamp(t, "dev", "", "", nil)
	got := String()
	want := "distlock dev (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// The real binary under test: whatever the stamp, the line starts with
// "distlock " and names the Go version it was built with.
func TestStringOfThisBinary(t *testing.T) {
	got := String()
	if !strings.HasPrefix(got, "distlock ") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("String() = %q", got)
	}
}

func TestIsPseudo(t *testing.T) {
	for v, want := range map[string]bool{
		"v0.0.0-20261121100000-abc123def456":        true,
		"v1.2.4-0.20261121100000-abc123def456":      true,
		"v1.2.4-rc.1.0.20261121100000-abc123def456": true,
		"v0.0.0-20261121100000-abc123def456+dirty":  true,
		"v1.2.3":          false,
		"v1.2.3-rc.1":     false,
		"v1.2.3+dirty":    false,
		"(devel)":         false,
		"v1.2.3-20261121": false,
	} {
		if got := isPseudo(v); got != want {
			t.Errorf("isPseudo(%q) = %v, want %v", v, got, want)
		}
	}
}
