package etcd

import "testing"

func TestContenderID(t *testing.T) {
	for id, want := range map[string]bool{
		"694d7a1b2c3d4e5f": true,
		"slot/0":           true,
		"slot/12":          true,
		"slot/":            false,
		"slot/x":           false,
		"a/b":              false,
		"":                 false,
		"not-hex":          false,
	} {
		if got := contenderID(id); got != want {
			t.Errorf("contenderID(%q) = %v, want %v", id, got, want)
		}
	}
}
