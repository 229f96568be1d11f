package lock

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"job:daily", true},
		{"deploy/prod eu-west", true},
		{"ключ", true},
		{strings.Repeat("k", MaxKeyLen), true},
		{"", false},
		{strings.Repeat("k", MaxKeyLen+1), false},
		{"a\nb", false},
		{"a\x00b", false},
		{"tab\there", false},
		{string([]byte{0xff, 0xfe}), false},
	} {
		err := ValidateKey(tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateKey(%q) error %v is not ErrInvalid", tc.key, err)
		}
	}
}

func TestValidateRequest(t *testing.T) {
	if err := ValidateRequest(Request{Key: "job:a", TTL: time.Second}); err != nil {
		t.Fatalf("a valid request: %v", err)
	}
	for _, req := range []Request{{Key: "", TTL: time.Second}, {Key: "job:a"}, {Key: "job:a", TTL: -time.Second}} {
		if err := ValidateRequest(req); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateRequest(%q, %s) = %v, want ErrInvalid", req.Key, req.TTL, err)
		}
	}
}
