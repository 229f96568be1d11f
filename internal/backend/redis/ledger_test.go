package redis

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
)

// proxiedRedlock is a Redlock over three masters, each behind a fault
// proxy (in URL order).
func proxiedRedlock(t *testing.T) (*Redlock, []*faultproxy.Proxy) {
	t.Helper()
	var ps []*faultproxy.Proxy
	var addrs []string
	for _, n := range startRedisMasters(t).Nodes {
		p, err := faultproxy.New(n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		ps, addrs = append(ps, p), append(addrs, p.Addr())
	}
	return openRedlock(t, "redlock://"+strings.Join(addrs, ",")), ps
}

func wantEntry(t *testing.T, r *Redlock, id, want string) {
	t.Helper()
	got, err := r.Entries(context.Background(), "job")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(got) != 1 || string(got[id]) != want {
		t.Fatalf("Entries = %q, want only %s = %q", got, id, want)
	}
}

// TestRedlockLedgerLatestWriteWins: an entry rewritten while master 0 was
// away (its end replacing its start) is read as rewritten from any quorum,
// also from master 0, which still has the start, and master 2: one answer
// each, and master 0 first in URL order.
func TestRedlockLedgerLatestWriteWins(t *testing.T) {
	r, ps := proxiedRedlock(t)
	ctx := context.Background()
	if err := r.PutEntry(ctx, "job", "run-1", []byte("start")); err != nil {
		t.Fatal(err)
	}
	ps[0].Drop()
	if err := r.PutEntry(ctx, "job", "run-1", []byte("end")); err != nil {
		t.Fatalf("PutEntry on two masters of three: %v", err)
	}
	ps[0].Heal()
	wantEntry(t, r, "run-1", "end")
	for _, away := range []int{1, 2} {
		ps[away].Drop()
		wantEntry(t, r, "run-1", "end")
		ps[away].Heal()
	}
}

// TestRedlockLedgerNeedsAQuorum: writes and reads need two masters of
// three; an entry written to two is read from any two, and one deleted
// from two is gone from them (master 2, away for the delete, would give it
// back: ledger.go).
func TestRedlockLedgerNeedsAQuorum(t *testing.T) {
	r, ps := proxiedRedlock(t)
	ctx := context.Background()
	ps[0].Drop()
	if err := r.PutEntry(ctx, "job", "run-1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ps[0].Heal()
	ps[1].Drop()
	wantEntry(t, r, "run-1", "x")
	ps[2].Drop()
	if err := r.PutEntry(ctx, "job", "run-2", []byte("y")); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("PutEntry on one master of three: %v, want unavailable", err)
	}
	if _, err := r.Entries(ctx, "job"); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Entries from one master of three: %v, want unavailable", err)
	}
	if err := r.DeleteEntries(ctx, "job", []string{"run-1"}); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("DeleteEntries on one master of three: %v, want unavailable", err)
	}
	ps[1].Heal()
	if err := r.DeleteEntries(ctx, "job", []string{"run-1", "run-2"}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Entries(ctx, "job")
	if err != nil || len(got) != 0 {
		t.Fatalf("Entries after the delete, from the two masters that took it: %q, %v; want none", got, err)
	}
}

// TestRedlockLedgerSlotSurvivesRestartsOneAtATime: masters with no
// persistence restart empty one at a time, never two down at once. A
// slot done while master 2 was down (its success on masters 0 and 1),
// then 2 back empty, then 0 restarted empty: the entry is on master 1
// alone, and the read of the next run (skipped) must spread it back, or
// once master 1 is down the slot reads open and runs again.
func TestRedlockLedgerSlotSurvivesRestartsOneAtATime(t *testing.T) {
	m, r := startMasters(t)
	const slot = "2026-11-26T12:00:00Z/1h"
	ledgerRun(t, r, "o0", "") // the warm-up run
	if err := m.Nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	ledgerRun(t, r, "o1", slot)
	for _, k := range []int{2, 0} {
		t0 := time.Now()
		if err := m.Nodes[k].Restart(); err != nil {
			t.Fatal(err)
		}
		t.Log("restart", time.Since(t0))
		waitAnswers(t, r, k)
		t.Log("answers", time.Since(t0))
	}
	if !slotDone(t, r, slot) {
		t.Fatal("the slot reads open with every master up")
	}
	if err := m.Nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if !slotDone(t, r, slot) {
		t.Fatal("the slot reads open once master 1, the last to hold its success, is down: the read before did not repair masters 0 and 2")
	}
}

// ledgerRun is a whole run of "rjob2" (its slot, if any, open) that
// succeeds, under a lease of owner's.
func ledgerRun(t *testing.T, r *Redlock, owner, slot string) {
	t.Helper()
	ctx := context.Background()
	l, err := lock.TryOnce(ctx, r, req("rjob2", owner, 1, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	run := &ledger.Run{Store: r, Key: "rjob2", Bound: ledger.DefaultBound, Slot: slot, Host: "host-a", PID: 42, Command: "echo", Log: slog.New(slog.DiscardHandler)}
	if err := run.Begin(ctx, l); err != nil {
		t.Fatalf("Begin of %s's run: %v", owner, err)
	}
	run.End(ctx, ledger.OK, 0)
}

func slotDone(t *testing.T, r *Redlock, slot string) bool {
	t.Helper()
	h, err := ledger.Read(context.Background(), r, "rjob2")
	if err != nil {
		t.Fatal(err)
	}
	return h.SlotDone(slot) != nil
}

// waitAnswers waits until master k answers again after a restart (the
// client does not retry: its pooled connections to the old process fail
// one by one).
func waitAnswers(t *testing.T, r *Redlock, k int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); r.nodes[k].c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("master %d does not answer after its restart", k)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedlockLedgerReadRepairs: a read writes what the merge picked to
// the masters that answered without it (master 2 missed a rewrite and a
// new entry), and a repair writes a field only if it still holds what
// the master answered: never over a write made since.
func TestRedlockLedgerReadRepairs(t *testing.T) {
	r, ps := proxiedRedlock(t)
	ctx := context.Background()
	if err := r.PutEntry(ctx, "job", "run-1", []byte("start")); err != nil {
		t.Fatal(err)
	}
	ps[2].Drop()
	for id, data := range map[string]string{"run-1": "end", "run-2": "x"} {
		if err := r.PutEntry(ctx, "job", id, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	ps[2].Heal()
	if _, err := r.Entries(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	raw, err := r.nodes[2].Entries(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"run-1": "end", "run-2": "x"} {
		if _, data := splitVersion(raw[id]); string(data) != want {
			t.Errorf("master 2's %s after the read: %q, want %q (repaired)", id, raw[id], want)
		}
	}
	n := r.nodes[2]
	if err := n.c.HSet(ctx, n.ledgerKey("job"), "run-3", "9:newer").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		answered, value string
		wrote           int
	}{
		{"", "5:older", 0},           // answered nothing, holds a write since
		{"=8:stale", "10:later", 0},  // answered another value
		{"=9:newer", "10:latest", 1}, // holds what it answered
	} {
		got, err := ledgerRepairScript().Run(ctx, n.c, []string{n.ledgerKey("job")}, "run-3", c.answered, c.value).Int()
		if err != nil || got != c.wrote {
			t.Fatalf("repair of run-3 (answered %q) to %q: %d, %v; want %d written", c.answered, c.value, got, err, c.wrote)
		}
	}
	if v := n.c.HGet(ctx, n.ledgerKey("job"), "run-3").Val(); v != "10:latest" {
		t.Fatalf("master 2's run-3: %q, want the one repair that held what was answered", v)
	}
}

// splitVersion reads what PutEntry wrote, and takes a value it did not
// write as all data.
func TestSplitVersion(t *testing.T) {
	for raw, want := range map[string]struct {
		ver  int64
		data string
	}{
		"17:a:b": {17, "a:b"},
		"17:":    {17, ""},
		"x:y":    {0, "x:y"},
		":y":     {0, ":y"},
		"-1:y":   {0, "-1:y"},
		"plain":  {0, "plain"},
	} {
		ver, data := splitVersion([]byte(raw))
		if ver != want.ver || string(data) != want.data {
			t.Errorf("splitVersion(%q) = %d, %q; want %d, %q", raw, ver, data, want.ver, want.data)
		}
	}
}
