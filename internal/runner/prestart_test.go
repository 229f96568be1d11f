package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
	"github.com/distlock/distlock/internal/renew"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// gatedLedger is a run ledger whose Begin answers only when the test
// lets it (gate closed): its inner Begin (the real ledger.Run, or
// nothing) has run first, so its answer is what the engine said then,
// arriving late. honorCtx: Begin also returns when its context ends
// (a client that heeds deadlines); else only at the gate (an answer
// that comes whatever distlock does meanwhile).
type gatedLedger struct {
	inner    Ledger
	honorCtx bool
	entered  chan struct{}
	gate     chan struct{}
}

func newGated(inner Ledger, honorCtx bool) *gatedLedger {
	return &gatedLedger{inner: inner, honorCtx: honorCtx, entered: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gatedLedger) Begin(ctx context.Context, lease lock.Lease) error {
	var err error
	if g.inner != nil {
		err = g.inner.Begin(ctx, lease)
	}
	close(g.entered)
	done := ctx.Done()
	if !g.honorCtx {
		done = nil
	}
	select {
	case <-g.gate:
		return err
	case <-done:
		return ctx.Err()
	}
}

func (g *gatedLedger) End(ctx context.Context, o ledger.Outcome, code int) {
	if g.inner != nil {
		g.inner.End(ctx, o, code)
	}
}

func (g *gatedLedger) awaitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run never reached the ledger's Begin")
	}
}

// startGated starts cfg with a gated ledger (no inner one) and returns
// once its Begin waits at the gate, with the moment before the start, t0,
// and the latest the lease's first term time can be (it was granted after
// t0).
func startGated(t *testing.T, cfg Config, honorCtx bool) (g *gatedLedger, ch <-chan outcome, t0, firstTerm time.Time) {
	t.Helper()
	g = newGated(nil, honorCtx)
	cfg.Ledger = g
	timing := renew.Timing{TTL: cfg.Request.TTL, KillGrace: cfg.KillGrace}
	t0 = time.Now()
	ch = start(cfg)
	g.awaitEntered(t)
	return g, ch, t0, timing.TermAt(timing.ValidUntil(t0), 0)
}

// notRun fails the test if the command left its marker.
func notRun(t *testing.T, marker string) {
	t.Helper()
	if exists(marker) {
		t.Fatal("the command was started")
	}
}

// The lease is lost while the ledger's Begin has not answered (every
// engine call stalls, --connect-timeout longer than the lease): the
// ledger step ends with the lease, the command is never started, the run
// exits lost (76), not after the ledger's whole timeout, and nothing is
// left locked.
func TestRunLeaseLostDuringLedgerNeverStartsCommand(t *testing.T) {
	s := memstore.New()
	marker := filepath.Join(t.TempDir(), "ran")
	cfg, _ := config(s, time.Second, "touch "+marker)
	cfg.ReleaseTimeout = 10 * time.Second
	g := newGated(nil, true)
	cfg.Ledger = g
	ch := start(cfg)
	g.awaitEntered(t)
	s.SetFaults(memstore.Faults{Stall: true})
	o := await(t, ch)
	var lost *LostError
	if !errors.As(o.err, &lost) || !lost.NotStarted {
		t.Fatalf("run: code %d, err %v; want a LostError before the start", o.code, o.err)
	}
	if o.took >= cfg.ReleaseTimeout {
		t.Errorf("the run took %s: the ledger step was bounded by --connect-timeout (%s), not the lease", o.took, cfg.ReleaseTimeout)
	}
	notRun(t, marker)
	mustBeFree(t, s)
}

// --slot: the ledger said the slot was open, but the answer arrived after
// the lease had expired and another run had done the slot. It must not
// count: the command is not started (76), so the slot runs once.
func TestRunLateLedgerAnswerDoesNotOpenSlot(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	markerA := filepath.Join(dir, "a")
	cfgA, _ := config(s, time.Second, "touch "+markerA)
	cfgA.ReleaseTimeout = 10 * time.Second
	cfgA, recA := withLedger(cfgA, s, "slot")
	g := newGated(recA, false)
	cfgA.Ledger = g
	chA := start(cfgA)
	g.awaitEntered(t) // A read the slot open; its answer is on the way
	s.SetFaults(memstore.Faults{Stall: true})
	wait.Until(t, 10*time.Second, "A's lease to expire in the engine", func() bool {
		_, held, err := s.Inspect(context.Background(), "k")
		return err == nil && !held
	})
	cfgB, _ := config(s, time.Second, "touch "+filepath.Join(dir, "b"))
	cfgB, _ = withLedger(cfgB, s, "slot")
	if o := await(t, start(cfgB)); o.err != nil || o.code != 0 || !exists(filepath.Join(dir, "b")) {
		t.Fatalf("B: code %d, err %v; want the slot run", o.code, o.err)
	}
	close(g.gate) // A's answer arrives: "open"
	o := await(t, chA)
	var lost *LostError
	if !errors.As(o.err, &lost) || !lost.NotStarted {
		t.Fatalf("A: code %d, err %v; want a LostError before the start", o.code, o.err)
	}
	notRun(t, markerA)
	mustBeFree(t, s)
}

// A ledger slower than the lease's first term time, while renewals
// succeed: the lease is confirmed by a renewal sent after the answer, and
// the command runs.
func TestRunSlowLedgerUnderRenewedLeaseStartsCommand(t *testing.T) {
	s := memstore.New()
	marker := filepath.Join(t.TempDir(), "ran")
	ttl := time.Second
	cfg, _ := config(s, ttl, "touch "+marker)
	cfg.ReleaseTimeout = 10 * time.Second
	g, ch, _, firstTerm := startGated(t, cfg, true)
	wait.Until(t, 10*time.Second, "the lease's first term time to pass, renewed", func() bool {
		return time.Now().After(firstTerm.Add(50*time.Millisecond)) && s.Renewals() > 0
	})
	close(g.gate)
	o := await(t, ch)
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: code %d, err %v; want the command run", o.code, o.err)
	}
	if !exists(marker) {
		t.Error("the command did not run")
	}
	mustBeFree(t, s)
}

// A terminating signal while the ledger's Begin has not answered: the
// command never starts, the run exits 128+N at once (not after the
// ledger's timeout) and gives the lock back.
func TestRunSignalDuringLedgerNeverStartsCommand(t *testing.T) {
	s := memstore.New()
	marker := filepath.Join(t.TempDir(), "ran")
	cfg, _ := config(s, 30*time.Second, "touch "+marker)
	cfg.ReleaseTimeout = 10 * time.Second
	g := newGated(nil, true)
	cfg.Ledger = g
	ch := start(cfg)
	g.awaitEntered(t)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := await(t, ch)
	var intr *InterruptedError
	if !errors.As(o.err, &intr) || intr.Signal != syscall.SIGTERM {
		t.Fatalf("run: code %d, err %v; want interrupted by SIGTERM", o.code, o.err)
	}
	if o.took >= cfg.ReleaseTimeout {
		t.Errorf("the run took %s: the signal waited for the ledger step", o.took)
	}
	notRun(t, marker)
	mustBeFree(t, s)
}

// The lock is broken and taken by another holder while the ledger's Begin
// has not answered, between two renewals: the keeper has not heard of it
// when the answer arrives, past the lease's first term time. The answer
// counts only once a renewal sent after it succeeds; this one is refused,
// so the command is not started (76) and the new holder keeps the lock.
func TestRunLedgerAnswerAfterTakeoverDoesNotStartCommand(t *testing.T) {
	s := memstore.New()
	marker := filepath.Join(t.TempDir(), "ran")
	ttl := 3 * time.Second
	cfg, _ := config(s, ttl, "touch "+marker)
	cfg.KillGrace, cfg.ReleaseTimeout = 1400*time.Millisecond, 10*time.Second
	g, ch, t0, firstTerm := startGated(t, cfg, false)
	// The first renewal (at TTL/3) has moved the expiry on; the next is
	// due at 2·TTL/3, after the answer below.
	wait.Until(t, 10*time.Second, "the first renewal", func() bool { return expiry(t, s).After(t0.Add(ttl + ttl/6)) })
	if _, err := s.Break(context.Background(), "k", 0); err != nil {
		t.Fatal(err)
	}
	other := lock.Request{Key: "k", TTL: 10 * time.Second, Owner: "other"}
	if _, err := lock.TryOnce(context.Background(), s, other); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "the lease's first term time to pass", func() bool { return time.Now().After(firstTerm.Add(50 * time.Millisecond)) })
	close(g.gate)
	o := await(t, ch)
	var lost *LostError
	if !errors.As(o.err, &lost) || !lost.NotStarted {
		t.Fatalf("run: code %d, err %v; want a LostError before the start", o.code, o.err)
	}
	notRun(t, marker)
	if h, held, err := s.Inspect(context.Background(), "k"); err != nil || !held || h.Owner != "other" {
		t.Fatalf("the new holder lost the lock: %+v held=%v err=%v", h, held, err)
	}
}
