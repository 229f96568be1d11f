package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func listKeys(t *testing.T, b *Backend, prefix string) []string {
	t.Helper()
	hs, err := b.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	var keys []string
	for _, h := range hs {
		keys = append(keys, h.Key)
	}
	return keys
}

func sameKeys(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestListHeldSortedAndPrefixed(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, "distlock")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var leases []lock.Lease
	for _, key := range []string{"zeta", "job:1", "alpha", "job*[x]", ".hidden", "slash/key"} {
		l, err := lock.TryOnce(ctx, b, lock.Request{Key: key, TTL: 3 * time.Second, Owner: "o-" + key, Meta: lock.Meta{Host: "h", PID: os.Getpid()}})
		if err != nil {
			t.Fatalf("acquire %q: %v", key, err)
		}
		leases = append(leases, l)
	}
	// Another namespace in the same directory is not ours.
	other, _ := Open(dir, "other")
	ol, err := lock.TryOnce(ctx, other, lock.Request{Key: "alpha", TTL: 3 * time.Second, Owner: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer ol.Release(ctx)

	if got, want := listKeys(t, b, ""), []string{".hidden", "alpha", "job*[x]", "job:1", "slash/key", "zeta"}; !sameKeys(got, want) {
		t.Fatalf("List(\"\") = %q, want %q", got, want)
	}
	if got, want := listKeys(t, b, "job"), []string{"job*[x]", "job:1"}; !sameKeys(got, want) {
		t.Fatalf("List(job) = %q, want %q", got, want)
	}
	if got := listKeys(t, b, "job*"); !sameKeys(got, []string{"job*[x]"}) {
		t.Fatalf("List(job*) = %q", got)
	}
	hs, _ := b.List(ctx, "alpha")
	if len(hs) != 1 || hs[0].Owner != "o-alpha" || hs[0].Token == 0 || hs[0].Meta.Host != "h" || hs[0].ExpiresIn <= 0 {
		t.Fatalf("List(alpha) = %+v", hs)
	}

	// A released lock is gone from the list at once.
	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, b, "zeta"); len(got) != 0 {
		t.Fatalf("released key still listed: %q", got)
	}
	for _, l := range leases[1:] {
		l.Release(ctx)
	}
}

// A sidecar left by a holder that died (its flock is free), a copy under
// another name and a half-written temp file are never listed.
func TestListSkipsStaleAndForeignSidecars(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, "distlock")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := lock.TryOnce(ctx, b, lock.Request{Key: "live", TTL: 3 * time.Second, Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	liveMeta := b.keyPaths("live").record()
	data, err := os.ReadFile(liveMeta)
	if err != nil {
		t.Fatal(err)
	}
	// stale: a sidecar and an unlocked lock file, as a SIGKILLed holder leaves them
	staleLock, staleMeta := b.keyPaths("stale").lock(), b.keyPaths("stale").record()
	os.WriteFile(staleLock, nil, 0o600)
	os.WriteFile(staleMeta, []byte(`{"key":"stale","owner":"dead","token":5,"ttl_ms":3000,"renewed_at":"2000-01-01T00:00:00Z"}`), 0o600)
	// a copy of the live sidecar under another key's name
	os.WriteFile(filepath.Join(dir, "distlock#copy.json"), data, 0o600)
	// a temp file and garbage
	os.WriteFile(liveMeta+".tmp123", data, 0o600)
	os.WriteFile(filepath.Join(dir, "distlock#junk.json"), []byte("{not json"), 0o600)

	if got := listKeys(t, b, ""); !sameKeys(got, []string{"live"}) {
		t.Fatalf("List = %q, want only the live key", got)
	}
}

func TestListMissingDirectory(t *testing.T) {
	b := &Backend{dir: filepath.Join(t.TempDir(), "gone"), prefix: "distlock"}
	hs, err := b.List(context.Background(), "")
	if err != nil || len(hs) != 0 {
		t.Fatalf("List on a missing directory = %v, %v; want nothing, no error", hs, err)
	}
}

func TestOwnSidecar(t *testing.T) {
	base := baseName("distlock", "job")
	for name, want := range map[string]bool{
		base + ".json":          true,
		base + "#slot0.json":    true,
		base + "#slot17.json":   true,
		base + "#slot.json":     false,
		base + "#slotx.json":    false,
		base + "#slot0.lock":    false,
		base + ".json.tmp42":    false,
		base + "x.json":         false,
		base + "#sem.lock":      false,
		base + "#rec.lock":      false,
		"distlock#other.json":   false,
		base + ".token":         false,
		base + "#slot0.json.tm": false,
	} {
		if got := ownSidecar(base, name); got != want {
			t.Errorf("ownSidecar(%q) = %v, want %v", name, got, want)
		}
	}
}
