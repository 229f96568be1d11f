package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
)

// clock is a fake clock that moves a second every reading.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

var t0 = time.Date(2026, 11, 25, 14, 5, 0, 0, time.UTC)

// fixture is one store, one clock and the warnings logged.
type fixture struct {
	s    *memstore.Store
	clk  *clock
	logs *bytes.Buffer
}

func newFixture() *fixture {
	return &fixture{s: memstore.New(), clk: &clock{t: t0}, logs: &bytes.Buffer{}}
}

// acquire takes "k" as owner and returns its lease.
func (f *fixture) acquire(t *testing.T, owner string) lock.Lease {
	t.Helper()
	l, err := lock.TryOnce(context.Background(), f.s, lock.Request{Key: "k", TTL: time.Minute, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (f *fixture) run(bound int, slot string) *Run {
	return &Run{Store: f.s, Key: "k", Bound: bound, Slot: slot, Host: "host-a", PID: 42, Command: "job.sh",
		Log: slog.New(slog.NewTextHandler(f.logs, nil)), Now: f.clk.now}
}

// runOnce is a whole run of "k" that ends with outcome: Begin's answer.
func (f *fixture) runOnce(t *testing.T, bound int, slot string, outcome Outcome, code int) error {
	t.Helper()
	l := f.acquire(t, fmt.Sprintf("owner-%d", f.clk.t.Unix()))
	defer l.Release(context.Background())
	r := f.run(bound, slot)
	if err := r.Begin(context.Background(), l); err != nil {
		return err
	}
	r.End(context.Background(), outcome, code)
	return nil
}

func (f *fixture) history(t *testing.T) History {
	t.Helper()
	h, err := Read(context.Background(), f.s, "k")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func codes(h History) []int {
	var out []int
	for _, e := range h.Runs {
		out = append(out, *e.ExitCode)
	}
	return out
}

// A failed run leaves its slot open; the next runs it; a third is
// skipped, written as skipped, and names the run that did the slot.
func TestSlotDoneOnlyBySuccess(t *testing.T) {
	f := newFixture()
	if err := f.runOnce(t, 100, "s1", Failed, 3); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := f.runOnce(t, 100, "s1", OK, 0); err != nil {
		t.Fatalf("second run after a failure: %v, want it to run", err)
	}
	err := f.runOnce(t, 100, "s1", OK, 0)
	var sk *SkippedError
	if !errors.As(err, &sk) || sk.Done.Outcome != OK || sk.Slot != "s1" {
		t.Fatalf("third run: %v, want skipped naming the successful run", err)
	}
	h := f.history(t)
	if got := fmt.Sprint(codes(h)); got != "[0 0 3]" || h.Runs[0].Outcome != Skipped {
		t.Fatalf("history codes %s, newest %s; want [0 0 3], skipped", got, h.Runs[0].Outcome)
	}
	if err := f.runOnce(t, 100, "s2", OK, 0); err != nil {
		t.Fatalf("another slot: %v, want it to run", err)
	}
}

// Every outcome but ok leaves the slot open.
func TestOnlyOKMarksTheSlot(t *testing.T) {
	for _, o := range []Outcome{Failed, Killed, Lost, MaxHold, Unknown} {
		f := newFixture()
		if err := f.runOnce(t, 100, "s", o, 1); err != nil {
			t.Fatal(err)
		}
		if done := f.history(t).SlotDone("s"); done != nil {
			t.Errorf("a %s run marked its slot done", o)
		}
	}
}

// The ledger keeps Bound runs, the newest, besides the success of a done
// slot (trim.go); the last success is pinned besides, and keeps its slot
// done once every run of it is gone (an older distlock's trim deletes it).
func TestTrimKeepsNewestAndPinsSuccess(t *testing.T) {
	f := newFixture()
	if err := f.runOnce(t, 2, "s", OK, 0); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := f.runOnce(t, 2, "", Failed, 10+i); err != nil {
			t.Fatal(err)
		}
	}
	h := f.history(t)
	if got := fmt.Sprint(codes(h)); got != "[13 12 0]" {
		t.Fatalf("kept runs' codes %s, want [13 12 0]", got)
	}
	raw, _ := f.s.Entries(context.Background(), "k")
	if len(raw) != 4 {
		t.Fatalf("%d entries, want 2 runs, the slot's success and the pinned success", len(raw))
	}
	if err := f.s.DeleteEntries(context.Background(), "k", []string{EntryID(h.Runs[2].Started, h.Runs[2].Holder)}); err != nil {
		t.Fatal(err)
	}
	if h := f.history(t); len(h.Runs) != 2 || h.LastSuccess == nil {
		t.Fatalf("after deleting the slot's run: %d runs, last success %v", len(h.Runs), h.LastSuccess)
	}
	var sk *SkippedError
	if err := f.runOnce(t, 2, "s", OK, 0); !errors.As(err, &sk) {
		t.Fatalf("run of a slot whose success was trimmed: %v, want skipped", err)
	}
}

// A run with no end shows as running while its holder holds the key, as
// unknown once it does not.
func TestRunningOrUnknown(t *testing.T) {
	f := newFixture()
	l := f.acquire(t, "owner-x")
	if err := f.run(100, "").Begin(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	h, _, _ := f.s.Inspect(context.Background(), "k")
	if got := f.history(t).Resolve([]lock.Holder{h}).Runs[0]; got.Outcome != Running || got.ExitCode != nil || got.Ended != nil {
		t.Fatalf("while held: %+v, want running, no end", got)
	}
	other := h
	other.Owner = "someone-else"
	if got := f.history(t).Resolve([]lock.Holder{other}).Runs[0]; got.Outcome != Unknown {
		t.Fatalf("held by another holder: %s, want unknown", got.Outcome)
	}
	if got := f.history(t).Resolve(nil).Runs[0]; got.Outcome != Unknown {
		t.Fatalf("free: %s, want unknown", got.Outcome)
	}
	if f.history(t).SlotDone("") != nil {
		t.Fatal("a run with no end marked a slot done")
	}
}

// A --once-per run whose ledger cannot be read must not run: the engine
// is unavailable. Without a slot the run goes on, with a warning.
func TestUnreadableLedger(t *testing.T) {
	f := newFixture()
	l := f.acquire(t, "o")
	f.s.SetFaults(memstore.Faults{Ledger: &lock.UnavailableError{Msg: "connection refused"}})
	err := f.run(100, "s").Begin(context.Background(), l)
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Begin with a slot on an unreadable ledger: %v, want unavailable", err)
	}
	r := f.run(100, "")
	if err := r.Begin(context.Background(), l); err != nil {
		t.Fatalf("Begin without a slot: %v, want the run to go on", err)
	}
	r.End(context.Background(), OK, 0)
	if !bytes.Contains(f.logs.Bytes(), []byte("cannot read the run ledger")) || !bytes.Contains(f.logs.Bytes(), []byte("cannot record the run's end")) {
		t.Fatalf("warnings: %s", f.logs)
	}
}

// A success that cannot be recorded says the slot stays open.
func TestUnmarkedSuccessWarns(t *testing.T) {
	f := newFixture()
	l := f.acquire(t, "o")
	r := f.run(100, "s")
	if err := r.Begin(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	f.s.SetFaults(memstore.Faults{Ledger: &lock.UnavailableError{Msg: "down"}})
	r.End(context.Background(), OK, 0)
	if !bytes.Contains(f.logs.Bytes(), []byte("cannot mark the slot done")) {
		t.Fatalf("warnings: %s", f.logs)
	}
}

func TestSlotOf(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		d    time.Duration
		want string
	}{
		{time.Date(2026, 11, 25, 23, 59, 59, 0, time.UTC), 24 * time.Hour, "2026-11-25T00:00:00Z/24h"},
		{time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), 24 * time.Hour, "2026-11-26T00:00:00Z/24h"},
		{time.Date(2026, 11, 25, 14, 5, 0, 0, time.FixedZone("x", 3600)), time.Hour, "2026-11-25T13:00:00Z/1h"},
		{time.Date(2026, 11, 25, 14, 44, 0, 0, time.UTC), 15 * time.Minute, "2026-11-25T14:30:00Z/15m"},
		{time.Date(2026, 11, 25, 14, 44, 0, 0, time.UTC), 90 * time.Minute, "2026-11-25T13:30:00Z/1h30m"},
		{time.Date(2026, 11, 25, 14, 44, 7, 0, time.UTC), 5 * time.Second, "2026-11-25T14:44:05Z/5s"},
	} {
		if got := SlotOf(c.at, c.d); got != c.want {
			t.Errorf("SlotOf(%s, %s) = %s, want %s", c.at, c.d, got, c.want)
		}
	}
}

func TestCheckSlotAndOncePer(t *testing.T) {
	for _, bad := range []string{"", string(bytes.Repeat([]byte("a"), 201)), "a\nb", "\xff"} {
		if err := CheckSlot(bad); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("CheckSlot(%q) = %v, want invalid", bad, err)
		}
	}
	if err := CheckSlot(string(bytes.Repeat([]byte("a"), 200))); err != nil {
		t.Error(err)
	}
	if CheckOncePer(999*time.Millisecond) == nil || CheckOncePer(time.Second) != nil {
		t.Error("--once-per's floor is 1s")
	}
}

// Entry ids sort by start and are valid for every engine.
func TestEntryID(t *testing.T) {
	a, b := EntryID(t0, "0123456789ab"), EntryID(t0.Add(time.Microsecond), "0123456789ab")
	if !lock.ValidEntryID(a) || a >= b || !lock.ValidEntryID(PinnedID) {
		t.Fatalf("ids %q %q", a, b)
	}
}
