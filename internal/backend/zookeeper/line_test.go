package zookeeper

import (
	"reflect"
	"testing"
)

// permutations calls f with every order of xs.
func permutations(xs []string, f func([]string)) {
	var walk func(int)
	walk = func(k int) {
		if k == len(xs) {
			f(append([]string(nil), xs...))
			return
		}
		for i := k; i < len(xs); i++ {
			xs[k], xs[i] = xs[i], xs[k]
			walk(k + 1)
			xs[k], xs[i] = xs[i], xs[k]
		}
	}
	walk(0)
}

// TestParseLineWhateverTheOrder: a contender with two lock nodes (a
// create retried after its answer was lost), or with a lock node beside
// its hold, or two holds, stands at one place, its lowest node's, in every
// order the server may list the children in: readers given the same
// children in different orders make the same line (else two could each
// find themselves first, or one its own place lost).
func TestParseLineWhateverTheOrder(t *testing.T) {
	children := []string{
		"lock-1-n-0000000001", "lock-1-b-0000000002", "lock-1-n-0000000003",
		"hold-1-h-0-0000000000", "hold-1-h-1-0000000000", "lock-1-h-0000000004",
		"slot-0", "foreign",
	}
	// Each entry as every reader must find it: nonce, place, the node
	// that stands for it, its hold.
	type seen struct {
		nonce      string
		seq        int64
		lock, hold string
	}
	want := []seen{
		{"h", 0, "lock-1-h-0000000004", "hold-1-h-1-0000000000"},
		{"n", 1, "lock-1-n-0000000001", ""},
		{"b", 2, "lock-1-b-0000000002", ""},
	}
	first := parseLine(children)
	var got []seen
	for _, e := range first {
		got = append(got, seen{e.nonce, e.seq, e.lock, e.hold})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("children listed as %q make the line\n%+v\nwant\n%+v", children, got, want)
	}
	orders := 0
	permutations(children, func(order []string) {
		orders++
		if got := parseLine(order); !reflect.DeepEqual(got, first) {
			t.Fatalf("children listed as %q make the line\n%+v\nlisted as %q\n%+v", order, got, children, first)
		}
	})
	if orders != 40320 {
		t.Fatalf("%d orders tried, want 8!", orders)
	}
}
