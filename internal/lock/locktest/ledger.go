package locktest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

// ledgerOf is b's run ledger; every engine must keep one.
func ledgerOf(t *testing.T, b lock.Backend) lock.Ledger {
	t.Helper()
	l, ok := b.(lock.Ledger)
	if !ok {
		t.Fatalf("%T does not implement lock.Ledger: every engine keeps the run ledger (docs/ARCHITECTURE.md, \"The run ledger\")", b)
	}
	return l
}

func wantEntries(t *testing.T, l lock.Ledger, key string, want map[string]string) {
	t.Helper()
	got, err := l.Entries(ctxT(t), key)
	if err != nil {
		t.Fatalf("Entries(%q): %v", key, err)
	}
	if got == nil {
		t.Fatalf("Entries(%q) = nil map, want an empty one", key)
	}
	if len(got) != len(want) {
		t.Fatalf("Entries(%q) has %d entries %v, want %d", key, len(got), keysOf(got), len(want))
	}
	for id, data := range want {
		if g, ok := got[id]; !ok || !bytes.Equal(g, []byte(data)) {
			t.Fatalf("Entries(%q)[%q] = %q (present %v), want %q", key, id, g, ok, data)
		}
	}
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// ledgerPutReplaceDelete: entries are kept per key, replaced whole, and
// deleted by id; keys that differ only in characters an engine escapes
// never share a ledger.
func (s suite) ledgerPutReplaceDelete(t *testing.T) {
	b := s.open(t)
	l := ledgerOf(t, b)
	ctx := ctxT(t)
	wantEntries(t, l, "job:never-run", map[string]string{})
	keys := []string{"job:daily", "job/daily", "job:daily/x", "job daily", "jöb:daily"}
	for i, k := range keys {
		if err := l.PutEntry(ctx, k, "run-1", []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatalf("PutEntry(%q): %v", k, err)
		}
	}
	for i, k := range keys {
		wantEntries(t, l, k, map[string]string{"run-1": fmt.Sprintf(`{"n":%d}`, i)})
	}
	k := keys[0]
	if err := l.PutEntry(ctx, k, "run-1", []byte(`{"n":"replaced"}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.PutEntry(ctx, k, "run-2.b_c", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, l, k, map[string]string{"run-1": `{"n":"replaced"}`, "run-2.b_c": `{}`})
	if err := l.DeleteEntries(ctx, k, []string{"run-1", "not-there"}); err != nil {
		t.Fatalf("DeleteEntries: %v", err)
	}
	wantEntries(t, l, k, map[string]string{"run-2.b_c": `{}`})
	wantEntries(t, l, keys[1], map[string]string{"run-1": `{"n":1}`})
}

// ledgerOutlivesTheLock: the ledger is apart from the lock. Entries
// survive the key's release and break; a key with only a ledger is free
// and not listed.
func (s suite) ledgerOutlivesTheLock(t *testing.T) {
	b := s.open(t)
	l := ledgerOf(t, b)
	ctx := ctxT(t)
	if err := l.PutEntry(ctx, "ledger:only", "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, held, err := b.Inspect(ctx, "ledger:only"); err != nil || held {
		t.Fatalf("a key with only a ledger: Inspect held=%v err=%v, want free", held, err)
	}
	le := mustAcquire(t, ctx, b, s.req("ledger:held", "owner-1", 1))
	if err := l.PutEntry(ctx, "ledger:held", "a", []byte("y")); err != nil {
		t.Fatal(err)
	}
	hs, err := b.List(ctx, "ledger:")
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Key != "ledger:held" {
		t.Fatalf("List(ledger:) = %v, want only the held key", hs)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, ctx, b, s.req("ledger:held", "owner-2", 1))
	if _, err := b.Break(ctx, "ledger:held", 0); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, l, "ledger:held", map[string]string{"a": "y"})
	wantEntries(t, l, "ledger:only", map[string]string{"a": "x"})
}

// ledgerHoldsAFullLedger: a hundred entries of the largest size round-trip.
func (s suite) ledgerHoldsAFullLedger(t *testing.T) {
	b := s.open(t)
	l := ledgerOf(t, b)
	ctx := ctxT(t)
	want := map[string]string{}
	for i := range 101 {
		id := fmt.Sprintf("%020d-h%02d", 1_700_000_000_000_000+i, i%7)
		data := strings.Repeat(string(rune('a'+i%26)), lock.MaxEntryLen)
		if err := l.PutEntry(ctx, "ledger:full", id, []byte(data)); err != nil {
			t.Fatalf("PutEntry #%d: %v", i, err)
		}
		want[id] = data
	}
	wantEntries(t, l, "ledger:full", want)
}

// LedgerFromNothing checks an engine's ledger whose storage is not there
// yet (a SQL deployment made before the ledger existed, its table
// dropped by the caller): a read finds no entries, the first write makes
// the storage, an entry with no data is stored empty, and an id holding a
// comma (never a valid one, but split by MySQL's FIND_IN_SET) deletes
// nothing.
func LedgerFromNothing(t *testing.T, l lock.Ledger, key string) {
	t.Helper()
	ctx := ctxT(t)
	if got, err := l.Entries(ctx, key); err != nil || len(got) != 0 {
		t.Fatalf("Entries with no storage = %q, %v; want none", got, err)
	}
	for _, id := range []string{"a", "b"} {
		if err := l.PutEntry(ctx, key, id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.PutEntry(ctx, key, "empty", nil); err != nil {
		t.Fatalf("PutEntry with no data: %v", err)
	}
	if err := l.DeleteEntries(ctx, key, []string{"a,b"}); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Entries(ctx, key); err != nil || len(got) != 3 || len(got["empty"]) != 0 {
		t.Fatalf("Entries = %q, %v; want a, b and empty", got, err)
	}
}
