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
