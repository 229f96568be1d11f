package lock

import (
	"context"
	"slices"
	"strings"
)

// Lister is implemented by engines that can enumerate the locks held under
// the backend's prefix (Redis: SCAN, never KEYS; etcd: one range read; file:
// a scan of the lock directory). `distlock list` and shell completion use it.
type Lister interface {
	// List returns the current holder of every held key that starts with
	// keyPrefix ("" = all keys), sorted by key. A key whose lease has
	// expired, or whose holder is gone, is not listed.
	List(ctx context.Context, keyPrefix string) ([]Holder, error)
}

// SortHolders sorts holders by key (bytewise), the order List promises.
func SortHolders(hs []Holder) {
	slices.SortFunc(hs, func(a, b Holder) int { return strings.Compare(a.Key, b.Key) })
}
