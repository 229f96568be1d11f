package lock

import (
	"slices"
	"strings"
)

// SortHolders sorts holders by key (bytewise), the order List promises.
func SortHolders(hs []Holder) {
	slices.SortFunc(hs, func(a, b Holder) int { return strings.Compare(a.Key, b.Key) })
}
