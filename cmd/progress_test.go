package cmd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// syncBuffer is a bytes.Buffer safe for the ticker goroutine and the test.
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

func holderFor(now time.Time) lock.Holder {
	return lock.Holder{
		Key: "job:daily", Token: 17, Meta: lock.Meta{Host: "host-b", PID: 4123},
		AcquiredAt: now.Add(-(2*time.Minute + 13*time.Second)), TTL: 30 * time.Second, ExpiresIn: 28 * time.Second,
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProgressLogsOffTerminal(t *testing.T) {
	var logs syncBuffer
	p := &waitProgress{
		key: "job:daily", log: slog.New(slog.NewTextHandler(&logs, nil)), out: &logs,
		every: 20 * time.Millisecond, now: time.Now, width: func() int { return 0 }, stopCh: make(chan struct{}),
	}
	now := time.Now()
	p.busy(holderFor(now))
	p.busy(holderFor(now)) // later busy attempts do not log again by themselves
	first := logs.String()
	if strings.Count(first, "\n") != 1 || !strings.Contains(first, `msg="waiting for lock" key=job:daily holder="held by host-b pid 4123 (token 17) for 2m13s, expires in 28s"`) {
		t.Fatalf("first log line:\n%s", first)
	}
	waitFor(t, "a repeated log line", func() bool { return strings.Count(logs.String(), "still waiting for lock") >= 2 })
	p.stop()
	p.stop() // idempotent
	n := strings.Count(logs.String(), "\n")
	time.Sleep(60 * time.Millisecond) // nothing more after stop
	if got := strings.Count(logs.String(), "\n"); got != n {
		t.Fatalf("logged after stop: %d lines, then %d", n, got)
	}
	if strings.Contains(logs.String(), "\r") || strings.Contains(logs.String(), "\x1b") {
		t.Fatalf("terminal control characters off a terminal:\n%q", logs.String())
	}
	if !strings.Contains(logs.String(), "waited=") {
		t.Fatalf("repeated lines should say how long we waited:\n%s", logs.String())
	}
}

func TestProgressLiveLine(t *testing.T) {
	var out syncBuffer
	p := &waitProgress{
		key: "job:daily", log: slog.New(slog.DiscardHandler), out: &out, live: true,
		every: 10 * time.Millisecond, now: time.Now, width: func() int { return 200 }, stopCh: make(chan struct{}),
	}
	now := time.Now()
	p.busy(holderFor(now))
	want := "\r\x1b[Kwaiting for job:daily — held by host-b pid 4123 (token 17) for 2m13s, expires in 28s"
	if got := out.String(); got != want {
		t.Fatalf("live line:\n got %q\nwant %q", got, want)
	}
	waitFor(t, "a redraw by the ticker", func() bool { return strings.Count(out.String(), "\r\x1b[K") >= 3 })
	p.stop()
	s := out.String()
	if !strings.HasSuffix(s, "\r\x1b[K") {
		t.Fatalf("line not cleared at the end: %q", s)
	}
	if strings.Contains(s, "\n") {
		t.Fatalf("a live line never ends in a newline: %q", s)
	}
}

func TestProgressLiveLineFitsTheTerminal(t *testing.T) {
	var out syncBuffer
	p := &waitProgress{
		key: "job:daily", log: slog.New(slog.DiscardHandler), out: &out, live: true,
		every: time.Hour, now: time.Now, width: func() int { return 30 }, stopCh: make(chan struct{}),
	}
	p.busy(holderFor(time.Now()))
	p.stop()
	line := strings.TrimPrefix(strings.TrimSuffix(out.String(), "\r\x1b[K"), "\r\x1b[K")
	if n := len([]rune(line)); n != 29 {
		t.Fatalf("line is %d runes wide on a 30-column terminal: %q", n, line)
	}
}

func TestProgressQuietSaysNothing(t *testing.T) {
	var out syncBuffer
	p := &waitProgress{
		key: "k", log: slog.New(slog.NewTextHandler(&out, nil)), out: &out, live: true, quiet: true,
		every: time.Millisecond, now: time.Now, width: func() int { return 0 }, stopCh: make(chan struct{}),
	}
	p.busy(holderFor(time.Now()))
	time.Sleep(20 * time.Millisecond)
	p.stop()
	if out.String() != "" {
		t.Fatalf("--quiet printed %q", out.String())
	}
}

// The countdown of a holder reported once runs out into "unknown", never
// into a made-up "expires in 0s".
func TestProgressExpiryCountdown(t *testing.T) {
	now := time.Now()
	p := &waitProgress{h: holderFor(now), seen: now}
	if got := p.current(now.Add(8 * time.Second)).ExpiresIn; got != 20*time.Second {
		t.Fatalf("after 8s: expires in %s, want 20s", got)
	}
	if got := p.current(now.Add(40 * time.Second)).ExpiresIn; got != -1 {
		t.Fatalf("after 40s: expires in %s, want unknown (-1)", got)
	}
}

// A stale report is refreshed from the engine.
func TestProgressRefreshesStaleHolder(t *testing.T) {
	now := time.Now()
	fresh := holderFor(now)
	fresh.ExpiresIn = 29 * time.Second
	calls := 0
	p := &waitProgress{
		key: "job:daily", every: time.Second, now: time.Now, h: holderFor(now), seen: now.Add(-time.Minute), timeout: time.Second,
		inspect: func(ctx context.Context, key string) (lock.Holder, bool, error) {
			calls++
			return fresh, true, nil
		},
	}
	p.refresh()
	if calls != 1 || p.h.ExpiresIn != 29*time.Second {
		t.Fatalf("stale holder not refreshed: %d calls, expires in %s", calls, p.h.ExpiresIn)
	}
	p.refresh() // fresh now: no second request
	if calls != 1 {
		t.Fatalf("fresh holder inspected again")
	}
}

// stop, which the runner calls the moment the lock is acquired (before the
// command starts), clears the live line.
func TestStopClearsTheLiveLine(t *testing.T) {
	var out syncBuffer
	p := &waitProgress{key: "k", log: slog.New(slog.DiscardHandler), out: &out, live: true, every: time.Hour, now: time.Now, width: func() int { return 0 }, stopCh: make(chan struct{})}
	p.busy(holderFor(time.Now()))
	p.stop()
	if !p.stopped || !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("stop did not clear the progress: %q", out.String())
	}
}
