package postgres

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// TestLedgerOnADeploymentFromBefore: tables made before the ledger
// existed get distlock_ledger at the first write; an entry with no data
// is stored empty (not NULL).
func TestLedgerOnADeploymentFromBefore(t *testing.T) {
	b := open(t, startServer(t).Addr(), "t")
	if _, err := lock.TryOnce(ctx(t), b, request("k", "o", 3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := (driver{b}).Exec(ctx(t), "DROP TABLE distlock_ledger"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Entries(ctx(t), "k"); err != nil || len(got) != 0 {
		t.Fatalf("Entries with no table = %q, %v; want none", got, err)
	}
	for _, id := range []string{"a", "b"} {
		if err := b.PutEntry(ctx(t), "k", id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.PutEntry(ctx(t), "k", "empty", nil); err != nil {
		t.Fatalf("PutEntry with no data: %v", err)
	}
	if err := b.DeleteEntries(ctx(t), "k", []string{"a,b"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Entries(ctx(t), "k"); err != nil || len(got) != 3 || len(got["empty"]) != 0 {
		t.Fatalf("Entries = %q, %v; want a, b and empty", got, err)
	}
}
