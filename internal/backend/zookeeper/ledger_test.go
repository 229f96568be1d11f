package zookeeper

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// TestLedgerKeepsARunToOneConnection: a run that holds its lock on its own
// session (the backend's own parked, admin.go) reads and writes its ledger
// on a session dialled for each call, and the backend's own stays parked.
func TestLedgerKeepsARunToOneConnection(t *testing.T) {
	p := startServer(t)
	b := open(t, p.Addr(), "ledgerconn")
	l, err := lock.TryOnce(ctx(t), b, request("k", "o", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx(t))
	if !adminParked(b) {
		t.Fatal("the backend's own session is open while the run holds its lock")
	}
	if err := b.PutEntry(ctx(t), "k", "run-1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Entries(ctx(t), "k"); err != nil || string(got["run-1"]) != "x" {
		t.Fatalf("Entries = %q, %v", got, err)
	}
	if err := b.DeleteEntries(ctx(t), "never-written", []string{"run-1", ".."}); err != nil {
		t.Fatalf("DeleteEntries of a key with no ledger: %v", err)
	}
	if !adminParked(b) {
		t.Fatal("the ledger left the backend's own session open: a run now holds two connections")
	}
}

func adminParked(b *Backend) bool {
	b.adm.mu.Lock()
	defer b.adm.mu.Unlock()
	return b.adm.s == nil
}
