package child

import (
	"slices"
	"testing"
)

func TestMergeEnv(t *testing.T) {
	base := []string{"PATH=/bin", "DISTLOCK_KEY=inherited", "HOME=/root", "EMPTY="}
	got := MergeEnv(base, []string{"DISTLOCK_KEY=job", "DISTLOCK_TOKEN=7"})
	want := []string{"PATH=/bin", "HOME=/root", "EMPTY=", "DISTLOCK_KEY=job", "DISTLOCK_TOKEN=7"}
	if !slices.Equal(got, want) {
		t.Errorf("MergeEnv = %q, want %q", got, want)
	}
}

func TestWithoutEnv(t *testing.T) {
	base := []string{"PATH=/bin", "DISTLOCK_PASSWORD=hunter2", "DISTLOCK_PASSWORD_FILE=/x", "HOME=/root", "DISTLOCK_PASSWORD="}
	got := WithoutEnv(base, "DISTLOCK_PASSWORD")
	want := []string{"PATH=/bin", "DISTLOCK_PASSWORD_FILE=/x", "HOME=/root"}
	if !slices.Equal(got, want) {
		t.Errorf("WithoutEnv = %q, want %q", got, want)
	}
	if got := WithoutEnv(base); !slices.Equal(got, base) {
		t.Errorf("WithoutEnv with no names = %q, want %q", got, base)
	}
}
