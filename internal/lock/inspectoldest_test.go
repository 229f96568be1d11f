package lock

import (
	"context"
	"errors"
	"testing"
)

func TestInspectOldest(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name   string
		hs     []Holder
		err    error
		want   uint64
		wantOK bool
	}{
		{"free", nil, nil, 0, false},
		{"failed", []Holder{{Token: 3}}, boom, 0, false},
		{"one", []Holder{{Token: 7}}, nil, 7, true},
		{"lowest token, unread last", []Holder{{Token: 0}, {Token: 9}, {Token: 4}}, nil, 4, true},
	} {
		slots := func(context.Context, string) ([]Holder, error) { return c.hs, c.err }
		h, ok, err := InspectOldest(context.Background(), "k", slots)
		if !errors.Is(err, c.err) || ok != c.wantOK || h.Token != c.want {
			t.Errorf("%s: InspectOldest = %+v, %v, %v; want token %d, %v, %v", c.name, h, ok, err, c.want, c.wantOK, c.err)
		}
	}
}
