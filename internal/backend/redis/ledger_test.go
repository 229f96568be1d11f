package redis

import (
	"context"
	"errors"
	"strings"
	"testing"

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
