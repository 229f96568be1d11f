package runner

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// A whole run against the in-memory store: the real runner, keeper and
// supervisor, a real command in its own process group; the store stands
// in for the engine, and the test sets its faults.

// syncBuffer is a command's output, read while the command runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func config(s *memstore.Store, ttl time.Duration, script string) (Config, *syncBuffer) {
	out := &syncBuffer{}
	return Config{
		Backend: s, BackendDesc: "memory://",
		Request:   lock.Request{Key: "k", TTL: ttl, Owner: "owner-secret"},
		KillGrace: ttl / 3, ReleaseTimeout: time.Second,
		Args:   []string{"sh", "-c", script},
		Stdout: out, Stderr: out,
		Log: slog.New(slog.DiscardHandler),
	}, out
}

type outcome struct {
	code int
	err  error
	took time.Duration
}

// start runs cfg on a goroutine; the outcome arrives on the channel.
func start(cfg Config) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		t0 := time.Now()
		code, err := Run(context.Background(), cfg)
		ch <- outcome{code, err, time.Since(t0)}
	}()
	return ch
}

func await(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20s")
		return outcome{}
	}
}

func mustBeFree(t *testing.T, s *memstore.Store) {
	t.Helper()
	if h, held, err := s.Inspect(context.Background(), "k"); err != nil || held {
		t.Fatalf("the lock is still held after the run: %+v (err %v)", h, err)
	}
}

// The command gets its token, its status is the run's, and the lock is
// released at the end.
func TestRunPassesStatusAndReleases(t *testing.T) {
	s := memstore.New()
	cfg, out := config(s, 2*time.Second, `echo "token=$DISTLOCK_TOKEN key=$DISTLOCK_KEY"; exit 3`)
	o := await(t, start(cfg))
	if o.err != nil || o.code != 3 {
		t.Fatalf("run: code %d, err %v; want 3, nil", o.code, o.err)
	}
	if !strings.Contains(out.String(), "key=k") || strings.Contains(out.String(), "token= ") {
		t.Errorf("the command's environment: %q", out.String())
	}
	mustBeFree(t, s)
}

// The engine answers that the lease is gone: the command is stopped at
// once, the run reports the loss.
func TestRunStopsCommandWhenEngineSaysNotOurs(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	cfg, _ := config(s, 900*time.Millisecond, "touch "+filepath.Join(dir, "started")+"; exec sleep 30")
	ch := start(cfg)
	wait.Until(t, 10*time.Second, "the command started", func() bool { return exists(filepath.Join(dir, "started")) })
	s.SetFaults(memstore.Faults{Err: lock.ErrNotHeld})
	o := await(t, ch)
	var lost *LostError
	if !errors.As(o.err, &lost) {
		t.Fatalf("run: code %d, err %v; want a LostError", o.code, o.err)
	}
	if o.code != 128+int(syscall.SIGTERM) && o.code != 128+int(syscall.SIGKILL) {
		t.Errorf("the command's status %d: it was not stopped by a signal", o.code)
	}
}

// Renewals that get no answer (a paused engine): the command is dead
// before the lease could have expired on the engine (TTL from the grant).
func TestRunStopsCommandBeforeLeaseEndsWhenRenewalsStall(t *testing.T) {
	s := memstore.New()
	s.SetFaults(memstore.Faults{Stall: true})
	ttl := 900 * time.Millisecond
	cfg, _ := config(s, ttl, "exec sleep 30")
	o := await(t, start(cfg))
	var lost *LostError
	if !errors.As(o.err, &lost) {
		t.Fatalf("run: code %d, err %v; want a LostError", o.code, o.err)
	}
	if o.took >= ttl {
		t.Errorf("the run ended %s after it began: the command outlived a %s lease", o.took, ttl)
	}
	if s.Renewals() == 0 {
		t.Error("no renewal was tried")
	}
}

// --max-hold stops a command that runs too long and releases the lock.
func TestRunMaxHoldStopsCommand(t *testing.T) {
	s := memstore.New()
	cfg, _ := config(s, 2*time.Second, "exec sleep 30")
	cfg.MaxHold = 300 * time.Millisecond
	o := await(t, start(cfg))
	var mh *MaxHoldError
	if !errors.As(o.err, &mh) {
		t.Fatalf("run: code %d, err %v; want a MaxHoldError", o.code, o.err)
	}
	mustBeFree(t, s)
}

// --min-hold keeps the lock after a command that ended sooner, marked.
func TestRunMinHoldKeepsLock(t *testing.T) {
	s := memstore.New()
	cfg, _ := config(s, 2*time.Second, "true")
	cfg.MinHold = 5 * time.Second
	o := await(t, start(cfg))
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: code %d, err %v", o.code, o.err)
	}
	h, held, err := s.Inspect(context.Background(), "k")
	if err != nil || !held || h.Hold != lock.HoldMinHold {
		t.Fatalf("after a min-hold run: %+v held=%v err=%v; want held, marked %q", h, held, err, lock.HoldMinHold)
	}
}

// A held key and no wait: busy, and the command never runs.
func TestRunBusyNeverStartsCommand(t *testing.T) {
	s := memstore.New()
	if _, err := lock.TryOnce(context.Background(), s, lock.Request{Key: "k", TTL: 5 * time.Second, Owner: "other"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, _ := config(s, time.Second, "touch "+filepath.Join(dir, "ran"))
	o := await(t, start(cfg))
	if !errors.Is(o.err, lock.ErrHeld) {
		t.Fatalf("run: code %d, err %v; want busy", o.code, o.err)
	}
	if exists(filepath.Join(dir, "ran")) {
		t.Error("the command ran although the lock was busy")
	}
}

// SIGTERM to distlock reaches the command; its status is the run's and
// the lock is released.
func TestRunForwardsSIGTERM(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	cfg, _ := config(s, 2*time.Second, `trap "exit 7" TERM; touch `+filepath.Join(dir, "started")+`; while :; do sleep 0.02; done`)
	ch := start(cfg)
	// Run has registered for the signal once the command runs.
	wait.Until(t, 10*time.Second, "the command started", func() bool { return exists(filepath.Join(dir, "started")) })
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := await(t, ch)
	if o.err != nil || o.code != 7 {
		t.Fatalf("run: code %d, err %v; want 7, nil", o.code, o.err)
	}
	mustBeFree(t, s)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
