package lock

import (
	"errors"
	"strings"
	"testing"
)

func TestHandleRoundTrip(t *testing.T) {
	h := Handle{Key: "deploy/prod eu", Owner: "abc", Token: 1795297416679287, TTLms: 1800000, LeaseID: 42}
	s := h.Encode()
	if strings.ContainsAny(s, " '\"$`\\=+/") {
		t.Errorf("encoded handle %q is not shell-safe", s)
	}
	got, err := ParseHandle(s)
	if err != nil || got != h {
		t.Fatalf("ParseHandle(Encode(h)) = %+v, %v; want %+v", got, err, h)
	}
	for _, bad := range []string{"", "!!!", "e30", Handle{Key: "k"}.Encode()} {
		if _, err := ParseHandle(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseHandle(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
