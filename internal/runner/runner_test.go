package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
	"github.com/distlock/distlock/internal/renew"
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

// The command's exit status is the run's, also when a signal ended it.
func TestRunPassesStatusThrough(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{{"exit 0", 0}, {"exit 255", 255}, {"kill -USR1 $$", 128 + int(syscall.SIGUSR1)}} {
		s := memstore.New()
		cfg, _ := config(s, 2*time.Second, c.script)
		o := await(t, start(cfg))
		if o.err != nil || o.code != c.want {
			t.Errorf("%q: code %d, err %v; want %d, nil", c.script, o.code, o.err, c.want)
		}
		mustBeFree(t, s)
	}
}

// ending says when a command (sh -c) and every process of its group have
// ended: its script begins with the prefix, which opens a FIFO for
// writing as descriptor 3, inherited by all it starts; gone gets the
// moment the test reads EOF from it.
type ending struct {
	prefix string
	gone   chan time.Time
}

func endingIn(t *testing.T, dir string) *ending {
	t.Helper()
	fifo := filepath.Join(dir, "ending")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e := &ending{prefix: "exec 3>" + fifo + "; ", gone: make(chan time.Time, 1)}
	go func() {
		f, err := os.OpenFile(fifo, os.O_RDONLY, 0) // until the command opens it
		if err != nil {
			return
		}
		defer f.Close()
		io.Copy(io.Discard, f)
		e.gone <- time.Now()
	}()
	t.Cleanup(func() {
		// Let the reader go if the command never opened it.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return e
}

func (e *ending) at(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-e.gone:
		return at
	case <-time.After(20 * time.Second):
		t.Fatal("the command's group still runs 20s on")
		return time.Time{}
	}
}

func waitStarted(t *testing.T, dir string) {
	t.Helper()
	wait.Until(t, 10*time.Second, "the command to start", func() bool { return exists(filepath.Join(dir, "started")) })
}

// expiry is when the store will let the lease go, or sooner (a lower
// bound: the clock is read before the store reads its own).
func expiry(t *testing.T, s *memstore.Store) time.Time {
	t.Helper()
	before := time.Now()
	h, held, err := s.Inspect(context.Background(), "k")
	if err != nil || !held {
		t.Fatalf("the lock is not held: %v", err)
	}
	return before.Add(h.ExpiresIn)
}

// termTrap is a command that notes a SIGTERM in dir/term and runs on,
// until SIGKILL; it touches dir/started first.
func termTrap(dir string) string {
	return `trap 'echo TERM > ` + filepath.Join(dir, "term") + `' TERM; touch ` + filepath.Join(dir, "started") + `; while :; do sleep 0.01; done`
}

// Renewals that get no answer (a paused engine): the command gets SIGTERM
// at TermAt (validUntil - kill-grace) and not before, SIGKILL at KillAt
// (max(δ, TTL/100) before validUntil) and not before, and is gone before
// the engine's lease ends. The run reports the loss (exit 76). Both come
// sooner, by at most TTL/20 - TTL/100, when the process's timers ran late
// (renew.Timing.Lead): "not before" allows for the most of that.
func TestRunStallKillsCommandBeforeLeaseEnds(t *testing.T) {
	s := memstore.New()
	s.SetFaults(memstore.Faults{Stall: true})
	dir := t.TempDir()
	ttl := 3 * time.Second
	end := endingIn(t, dir)
	cfg, _ := config(s, ttl, end.prefix+termTrap(dir))
	t0 := time.Now()
	ch := start(cfg)
	waitStarted(t, dir)
	expires := expiry(t, s)
	// The lease was granted after t0: these are the earliest moments the
	// keeper may act.
	timing := renew.Timing{TTL: ttl, KillGrace: cfg.KillGrace}
	validUntil := timing.ValidUntil(t0)
	late := ttl // any lateness: the earliest TermAt and KillAt there are
	gone := end.at(t)
	// The trap wrote the file once the SIGTERM had come. File times are
	// coarse: they lag the clock by up to a tick (10 ms at HZ=100).
	const coarse = 20 * time.Millisecond
	if fi, err := os.Stat(filepath.Join(dir, "term")); err != nil {
		t.Error("the command got no SIGTERM before the SIGKILL")
	} else if fi.ModTime().Add(coarse).Before(timing.TermAt(validUntil, late)) {
		t.Errorf("SIGTERM %s after the start, before TermAt (%s)", fi.ModTime().Sub(t0), timing.TermAt(validUntil, late).Sub(t0))
	}
	o := await(t, ch)
	var lost *LostError
	if !errors.As(o.err, &lost) {
		t.Fatalf("run: code %d, err %v; want a LostError", o.code, o.err)
	}
	if o.code != 128+int(syscall.SIGKILL) {
		t.Errorf("the command's status %d: want %d, killed by the SIGKILL", o.code, 128+int(syscall.SIGKILL))
	}
	if gone.Before(timing.KillAt(validUntil, late)) {
		t.Errorf("the command was gone %s after the start, before KillAt (%s)", gone.Sub(t0), timing.KillAt(validUntil, late).Sub(t0))
	}
	if !gone.Before(expires) {
		t.Errorf("the command was gone %s after the start, %s after the engine let the lease go", gone.Sub(t0), gone.Sub(expires))
	}
	if s.Renewals() == 0 {
		t.Error("no renewal was tried")
	}
}

// The engine answers that the lease is gone (a poke, SIGWINCH, has the
// keeper ask at once): the command gets SIGTERM now and SIGKILL 100 ms
// later (renew.LostGrace), not at the end of a long kill-grace.
func TestRunNotOursKillsCommandSoon(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	end := endingIn(t, dir)
	cfg, _ := config(s, 20*time.Second, end.prefix+termTrap(dir))
	cfg.KillGrace = 5 * time.Second
	ch := start(cfg)
	waitStarted(t, dir)
	s.SetFaults(memstore.Faults{Err: lock.ErrNotHeld})
	poked := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	gone := end.at(t)
	o := await(t, ch)
	var lost *LostError
	if !errors.As(o.err, &lost) {
		t.Fatalf("run: code %d, err %v; want a LostError", o.code, o.err)
	}
	if !exists(filepath.Join(dir, "term")) {
		t.Error("the command got no SIGTERM before the SIGKILL")
	}
	if o.code != 128+int(syscall.SIGKILL) {
		t.Errorf("the command's status %d: want %d, killed by the SIGKILL", o.code, 128+int(syscall.SIGKILL))
	}
	if d := gone.Sub(poked); d < renew.LostGrace || d > 2*time.Second {
		t.Errorf("the command was gone %s after the poke; want the SIGKILL %s after the SIGTERM, not kill-grace's %s", d, renew.LostGrace, cfg.KillGrace)
	}
	if s.Renewals() == 0 {
		t.Error("the poke sent no renewal")
	}
}

// --max-hold: SIGTERM at acquisition + max-hold, SIGKILL kill-grace later;
// the run reports it (exit 124) and the lock is released.
func TestRunMaxHoldStopsCommand(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	end := endingIn(t, dir)
	cfg, _ := config(s, 2*time.Second, end.prefix+termTrap(dir))
	cfg.MaxHold, cfg.KillGrace = 300*time.Millisecond, 300*time.Millisecond
	t0 := time.Now()
	ch := start(cfg)
	waitStarted(t, dir)
	gone := end.at(t)
	o := await(t, ch)
	var mh *MaxHoldError
	if !errors.As(o.err, &mh) {
		t.Fatalf("run: code %d, err %v; want a MaxHoldError", o.code, o.err)
	}
	if !exists(filepath.Join(dir, "term")) {
		t.Error("the command got no SIGTERM before the SIGKILL")
	}
	if o.code != 128+int(syscall.SIGKILL) {
		t.Errorf("the command's status %d: want %d, killed by the SIGKILL", o.code, 128+int(syscall.SIGKILL))
	}
	if d := gone.Sub(t0); d < cfg.MaxHold+cfg.KillGrace {
		t.Errorf("the command was gone %s after the start, before max-hold + kill-grace (%s)", d, cfg.MaxHold+cfg.KillGrace)
	}
	mustBeFree(t, s)
}

// --min-hold keeps the lock after a command that ended sooner, marked,
// until acquisition + min-hold (not a TTL); the command's status is the
// run's.
func TestRunMinHoldKeepsLock(t *testing.T) {
	s := memstore.New()
	ttl := time.Second
	cfg, _ := config(s, ttl, "exit 5")
	cfg.MinHold = 5 * time.Second
	o := await(t, start(cfg))
	if o.err != nil || o.code != 5 {
		t.Fatalf("run: code %d, err %v; want 5, nil", o.code, o.err)
	}
	h, held, err := s.Inspect(context.Background(), "k")
	if err != nil || !held || h.Hold != lock.HoldMinHold {
		t.Fatalf("after a min-hold run: %+v held=%v err=%v; want held, marked %q", h, held, err, lock.HoldMinHold)
	}
	if h.ExpiresIn <= cfg.MinHold-o.took-time.Second || h.ExpiresIn > cfg.MinHold {
		t.Errorf("the lock is kept for %s more after a %s run; want the rest of min-hold %s", h.ExpiresIn, o.took, cfg.MinHold)
	}
}

// When the command exits leaving a grandchild that ignores SIGTERM, the
// grandchild gets SIGKILL after kill-grace, and the lock is released only
// once it is gone; the command's status is the run's.
func TestRunReleasesOnlyOnceGroupIsGone(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cfg, _ := config(s, 3*time.Second, `(trap "" TERM; exec sleep 1000) & echo $! > `+pidFile+`; exit 5`)
	cfg.KillGrace = 500 * time.Millisecond
	// Not a pipe that Run copies from: the command's Wait would wait for
	// the grandchild to close it.
	cfg.Stdout, cfg.Stderr = nil, nil
	ch := start(cfg)
	var pid int
	wait.Until(t, 10*time.Second, "the grandchild's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	sawHeld := false
	wait.Until(t, 10*time.Second, "the lock to be released", func() bool {
		_, held, err := s.Inspect(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if held {
			sawHeld = true
			return false
		}
		if alive(pid) {
			t.Fatalf("the lock was released while the command's grandchild %d still ran", pid)
		}
		return true
	})
	if !sawHeld {
		t.Error("the lock was never seen held while the grandchild ran")
	}
	o := await(t, ch)
	if o.err != nil || o.code != 5 {
		t.Fatalf("run: code %d, err %v; want 5, nil", o.code, o.err)
	}
}

// alive: process pid exists and has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// A second SIGTERM to distlock kills the command that ignored the first;
// the lock is released.
func TestRunSecondSIGTERMKills(t *testing.T) {
	s := memstore.New()
	dir := t.TempDir()
	cfg, _ := config(s, 2*time.Second, termTrap(dir))
	ch := start(cfg)
	waitStarted(t, dir)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "the command to get the SIGTERM", func() bool { return exists(filepath.Join(dir, "term")) })
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := await(t, ch)
	if o.err != nil || o.code != 128+int(syscall.SIGKILL) {
		t.Fatalf("run: code %d, err %v; want %d (SIGKILL), nil", o.code, o.err, 128+int(syscall.SIGKILL))
	}
	mustBeFree(t, s)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
