package etcd

import (
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestListAllPassesTheLedger: List("") starts its range past the ledger
// ("<prefix>/#ledger/"), yet still from the first byte an escaped key can
// start with ('$'), and never shows an entry.
func TestListAllPassesTheLedger(t *testing.T) {
	eachServer(t, func(t *testing.T, s server) {
		b := newBackend(t, s)
		ctx := wait.Context(t, 10*time.Second)
		keys := []string{"$first", "~last", "#hash"}
		for _, k := range keys {
			l, err := lock.TryOnce(ctx, b, request(k, "o-"+k, 3*time.Second))
			if err != nil {
				t.Fatalf("try-once(%q): %v", k, err)
			}
			defer l.Release(ctx)
			if err := b.PutEntry(ctx, k, "run-1", []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		hs, err := b.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hs {
			got = append(got, h.Key)
		}
		if want := []string{"#hash", "$first", "~last"}; !slices.Equal(got, want) {
			t.Errorf("List(\"\") keys = %q, want %q", got, want)
		}
	})
}
