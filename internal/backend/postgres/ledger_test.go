package postgres

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/locktest"
)

// TestLedgerOnADeploymentFromBefore: tables made before the ledger
// existed (distlock_ledger dropped) get it at the first write, and the
// ledger then behaves as locktest.LedgerFromNothing says.
func TestLedgerOnADeploymentFromBefore(t *testing.T) {
	b := open(t, startServer(t).Addr(), "t")
	if _, err := lock.TryOnce(ctx(t), b, request("k", "o", 3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := (driver{b}).Exec(ctx(t), "DROP TABLE distlock_ledger"); err != nil {
		t.Fatal(err)
	}
	locktest.LedgerFromNothing(t, b, "k")
}
