package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// skipped says whether a run of slot on "k" found its slot done.
func (f *fixture) skipped(t *testing.T, bound int, slot string) bool {
	t.Helper()
	err := f.runOnce(t, bound, slot, OK, 0)
	var sk *SkippedError
	if err != nil && !errors.As(err, &sk) {
		t.Fatal(err)
	}
	return sk != nil
}

// The audit's run: with --history 1 (and 2), --slot a, then --slot b,
// then runs of b that push a's success out of the last runs, then
// --slot a again: a is done and must not run again.
func TestDoneSlotStaysDoneAfterTrim(t *testing.T) {
	for _, bound := range []int{1, 2} {
		t.Run(fmt.Sprint("history-", bound), func(t *testing.T) {
			f := newFixture()
			if f.skipped(t, bound, "a") || f.skipped(t, bound, "b") {
				t.Fatal("a first run of a slot was skipped")
			}
			for range bound {
				if !f.skipped(t, bound, "b") {
					t.Fatal("b ran twice")
				}
			}
			if !f.skipped(t, bound, "a") {
				t.Fatal("slot a ran again after its run was trimmed")
			}
		})
	}
}

// --once-per 1h fired every minute by two replicas: the 13:00 slot's
// success, then the 14:00 slot's, then many skipped runs of 14:00 (more
// than the default --history); a replica whose clock is late asks for
// 13:00: it is done.
func TestOncePerLateReplicaAfterManySkips(t *testing.T) {
	f := newFixture()
	at := func(h, m int) string { return SlotOf(time.Date(2026, 11, 25, h, m, 0, 0, time.UTC), time.Hour) }
	if f.skipped(t, DefaultBound, at(13, 5)) || f.skipped(t, DefaultBound, at(14, 0)) {
		t.Fatal("a first run of a slot was skipped")
	}
	for range 2 * DefaultBound {
		if !f.skipped(t, DefaultBound, at(14, 1)) {
			t.Fatal("the 14:00 slot ran twice")
		}
	}
	if !f.skipped(t, DefaultBound, at(13, 59)) {
		t.Fatal("a late replica ran the 13:00 slot again after skipped runs trimmed its success")
	}
	if n := len(f.history(t).Runs); n != DefaultBound+2 {
		t.Fatalf("%d runs kept, want the last %d and the successes of 13:00 and 14:00", n, DefaultBound)
	}
}

// The bound: a slot stays done until MinDoneSlots other slots (or
// --history, if more) have succeeded since; the ledger holds at most
// that many successes besides its last runs and the pinned one.
func TestDoneSlotsAreBounded(t *testing.T) {
	for _, bound := range []int{1, MinDoneSlots + 20} {
		f := newFixture()
		n := max(bound, MinDoneSlots)
		for i := range n + 1 {
			slot := fmt.Sprint("s", i)
			if f.skipped(t, bound, slot) || !f.skipped(t, bound, slot) {
				t.Fatalf("--history %d: slot %s ran twice or not at all", bound, slot)
			}
		}
		raw, _ := f.s.Entries(context.Background(), "k")
		if want := bound + n + 1; len(raw) > want {
			t.Fatalf("--history %d: %d entries, want at most %d", bound, len(raw), want)
		}
		if !f.skipped(t, bound, "s1") {
			t.Fatalf("--history %d: s1, done %d slots ago, ran again", bound, n)
		}
		if f.skipped(t, bound, "s0") {
			t.Fatalf("--history %d: s0, done %d slots ago, still remembered", bound, n+1)
		}
	}
}
