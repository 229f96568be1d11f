package zookeeper

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
)

// TestLedgerKeepsARunToOneConnection: a run that holds its lock on its own
// session (the backend's own parked, session.go) reads and writes its ledger
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

// TestLedgerBoundedByContext: against a server that does not answer, each
// ledger call ends with its context, on the backend's own session and on
// one dialled for the call (the backend's own parked by a holder).
func TestLedgerBoundedByContext(t *testing.T) {
	p := startServer(t)
	px, err := faultproxy.New(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	b := open(t, px.Addr(), "ledgerpause")
	calls := map[string]func(context.Context) error{
		"Entries":       func(c context.Context) error { _, err := b.Entries(c, "k"); return err },
		"PutEntry":      func(c context.Context) error { return b.PutEntry(c, "k", "a", nil) },
		"DeleteEntries": func(c context.Context) error { return b.DeleteEntries(c, "k", []string{"a"}) },
	}
	for _, parked := range []bool{false, true} {
		if parked {
			px.Resume()
			l, err := lock.TryOnce(ctx(t), b, request("k", "o", 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx(t))
		}
		px.Pause()
		for name, call := range calls {
			c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			begin := time.Now()
			err := call(c)
			cancel()
			if took := time.Since(begin); err == nil || took > 700*time.Millisecond {
				t.Errorf("%s (parked %v) against a paused server: %v after %s; want an error within ~200ms", name, parked, err, took)
			}
			t.Logf("%s (parked %v): %v", name, parked, err)
		}
	}
	px.Resume()
}
