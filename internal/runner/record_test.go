package runner

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
)

// recorder is the real ledger.Run, noting whether the lock was still held
// (and not yet kept by --min-hold) when the run's end was written.
type recorder struct {
	*ledger.Run
	s          *memstore.Store
	heldAtEnd  bool
	holdAtEnd  string
	endedCalls int
}

func (r *recorder) End(ctx context.Context, o ledger.Outcome, code int) {
	h, held, _ := r.s.Inspect(ctx, "k")
	r.heldAtEnd, r.holdAtEnd = held, h.Hold
	r.endedCalls++
	r.Run.End(ctx, o, code)
}

func withLedger(cfg Config, s *memstore.Store, slot string) (Config, *recorder) {
	rec := &recorder{Run: &ledger.Run{Store: s, Key: "k", Bound: 10, Slot: slot, Host: "h", Command: "sh", Log: slog.New(slog.DiscardHandler)}, s: s}
	cfg.Ledger = rec
	return cfg, rec
}

func lastRun(t *testing.T, s *memstore.Store) ledger.Entry {
	t.Helper()
	h, err := ledger.Read(context.Background(), s, "k")
	if err != nil || len(h.Runs) == 0 {
		t.Fatalf("the ledger has no run (err %v)", err)
	}
	return h.Runs[0]
}

// Each way a command ends is recorded with its outcome and status, while
// the lock is still held.
func TestRunRecordsOutcome(t *testing.T) {
	for _, c := range []struct {
		script  string
		maxHold time.Duration
		want    ledger.Outcome
		code    int
	}{
		{"exit 0", 0, ledger.OK, 0},
		{"exit 3", 0, ledger.Failed, 3},
		{"exit 143", 0, ledger.Failed, 143},
		{"kill -TERM $$", 0, ledger.Killed, 143},
		{"sleep 5", 300 * time.Millisecond, ledger.MaxHold, 143},
	} {
		s := memstore.New()
		cfg, _ := config(s, 2*time.Second, c.script)
		cfg.MaxHold = c.maxHold
		cfg, rec := withLedger(cfg, s, "")
		await(t, start(cfg))
		e := lastRun(t, s)
		if e.Outcome != c.want || e.ExitCode == nil || *e.ExitCode != c.code || e.Ended == nil {
			t.Errorf("%q: recorded %+v, want %s exit %d", c.script, e, c.want, c.code)
		}
		if !rec.heldAtEnd {
			t.Errorf("%q: the run's end was written after the lock was let go", c.script)
		}
		mustBeFree(t, s)
	}
}

// A lease lost while the command runs is recorded as lost.
func TestRunRecordsLost(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	cfg, _ := config(s, time.Second, "touch "+filepath.Join(dir, "started")+"; sleep 5")
	cfg, _ = withLedger(cfg, s, "")
	ch := start(cfg)
	waitStarted(t, dir)
	s.SetFaults(memstore.Faults{Err: lock.ErrNotHeld})
	await(t, ch)
	if e := lastRun(t, s); e.Outcome != ledger.Lost {
		t.Fatalf("recorded %s, want lost", e.Outcome)
	}
}

// A command that cannot be started is recorded as failed, 127.
func TestRunRecordsStartFailure(t *testing.T) {
	s := memstore.New()
	cfg, _ := config(s, time.Second, "")
	cfg.Args = []string{"/nonexistent/command"}
	cfg, _ = withLedger(cfg, s, "")
	await(t, start(cfg))
	if e := lastRun(t, s); e.Outcome != ledger.Failed || *e.ExitCode != 127 {
		t.Fatalf("recorded %s exit %d, want failed 127", e.Outcome, *e.ExitCode)
	}
}

// --min-hold: the end is written before the lock is kept, so the next
// replica, which waits for the hold to end, reads it.
func TestRunRecordsBeforeMinHold(t *testing.T) {
	s := memstore.New()
	cfg, _ := config(s, time.Second, "exit 0")
	cfg.MinHold = 3 * time.Second
	cfg, rec := withLedger(cfg, s, "")
	await(t, start(cfg))
	if !rec.heldAtEnd || rec.holdAtEnd != "" {
		t.Fatalf("end written with held=%v hold=%q; want held, before the min-hold", rec.heldAtEnd, rec.holdAtEnd)
	}
}

// A run whose slot is done does not start the command, records no end,
// and releases the lock at once (no --min-hold).
func TestRunSkipsDoneSlot(t *testing.T) {
	s := memstore.New()
	cfg, _ := config(s, time.Second, "exit 0")
	cfg, _ = withLedger(cfg, s, "s")
	await(t, start(cfg))
	dir := t.TempDir()
	cfg, _ = config(s, time.Second, "touch "+filepath.Join(dir, "ran"))
	cfg.MinHold = time.Minute
	cfg, rec := withLedger(cfg, s, "s")
	o := await(t, start(cfg))
	var sk *ledger.SkippedError
	if !errors.As(o.err, &sk) || o.code != 0 {
		t.Fatalf("second run of a done slot: code %d, err %v; want skipped", o.code, o.err)
	}
	if exists(filepath.Join(dir, "ran")) || rec.endedCalls != 0 {
		t.Fatalf("the command ran (or an end was recorded: %d) for a done slot", rec.endedCalls)
	}
	mustBeFree(t, s)
	if e := lastRun(t, s); e.Outcome != ledger.Skipped {
		t.Fatalf("recorded %s, want skipped", e.Outcome)
	}
}

// A slot whose ledger cannot be read: the command does not run, the run
// is unavailable, and the lock is released.
func TestRunUnreadableLedgerDoesNotRun(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	cfg, _ := config(s, time.Second, "touch "+filepath.Join(dir, "ran"))
	cfg, _ = withLedger(cfg, s, "s")
	s.SetFaults(memstore.Faults{Ledger: &lock.UnavailableError{Msg: "down"}})
	o := await(t, start(cfg))
	if !errors.Is(o.err, lock.ErrUnavailable) || exists(filepath.Join(dir, "ran")) {
		t.Fatalf("run: err %v, ran=%v; want unavailable, not run", o.err, exists(filepath.Join(dir, "ran")))
	}
	mustBeFree(t, s)
}
