package lock

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckEntry(t *testing.T) {
	long := strings.Repeat("x", MaxEntryLen)
	for _, c := range []struct {
		id   string
		data string
		ok   bool
	}{
		{"run-1", "{}", true},
		{"00001700000000000000-h1.x_y", long, true},
		{strings.Repeat("a", 64), "", true},
		{"run-1", long + "x", false},
		{"", "{}", false},
		{".hidden", "{}", false},
		{"a/b", "{}", false},
		{"a,b", "{}", false},
		{"jöb", "{}", false},
		{strings.Repeat("a", 65), "", false},
	} {
		err := CheckEntry(c.id, []byte(c.data))
		if c.ok != (err == nil) {
			t.Errorf("CheckEntry(%q, %d bytes) = %v, want ok=%v", c.id, len(c.data), err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckEntry(%q): %v is not ErrInvalid", c.id, err)
		}
	}
}
