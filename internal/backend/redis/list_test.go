package redis

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/distlock/distlock/internal/lock"
)

func TestGlobEscape(t *testing.T) {
	for in, want := range map[string]string{
		"job:daily": "job:daily",
		"a*b?c":     `a\*b\?c`,
		"x[1]":      `x\[1\]`,
		`back\`:     `back\\`,
		"{}":        "{}",
	} {
		if got := globEscape(in); got != want {
			t.Errorf("globEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

func newListTestBackend(t *testing.T) (*Backend, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	cfg, err := ParseURL("redis://" + m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "distlock"
	cfg.ConnectTimeout = 2 * time.Second
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, m
}

func TestListFindsLockHashesOnly(t *testing.T) {
	b, m := newListTestBackend(t)
	ctx := context.Background()
	for _, key := range []string{"zeta", "job*", "jobX", "a[1]", "a1", "x}:token", "x"} {
		if _, err := lock.TryOnce(ctx, b, lock.Request{Key: key, TTL: 3 * time.Second, Owner: "o-" + key, Meta: lock.Meta{Host: "h", PID: 7, Note: "n"}}); err != nil {
			t.Fatalf("acquire %q: %v", key, err)
		}
	}
	// Things that are not lock hashes of this prefix.
	m.Set("distlock:{fake}", "a string, not a hash")
	m.HSet("distlock:{noowner}", "foo", "bar")
	m.HSet("other:{alien}", "owner", "o")

	hs, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range hs {
		keys = append(keys, h.Key)
	}
	want := []string{"a1", "a[1]", "job*", "jobX", "x", "x}:token", "zeta"}
	if len(keys) != len(want) {
		t.Fatalf("List = %q, want %q", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("List = %q, want %q", keys, want)
		}
	}
	h := hs[0]
	if h.Owner != "o-a1" || h.Token == 0 || h.Meta.Host != "h" || h.Meta.PID != 7 || h.Meta.Note != "n" || h.TTL != 3*time.Second || h.ExpiresIn <= 0 {
		t.Fatalf("holder = %+v", h)
	}

	for prefix, want := range map[string][]string{
		"job*": {"job*"},
		"a[":   {"a[1]"},
		"x}":   {"x}:token"},
		"nope": nil,
	} {
		hs, err := b.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != len(want) || (len(want) == 1 && hs[0].Key != want[0]) {
			t.Errorf("List(%q) = %+v, want %q", prefix, hs, want)
		}
	}

	// An expired lease is not listed.
	m.FastForward(4 * time.Second)
	if hs, _ := b.List(ctx, ""); len(hs) != 0 {
		t.Fatalf("expired locks listed: %+v", hs)
	}
}
