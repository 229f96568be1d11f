package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// How often waiting progress is refreshed: the live line on a terminal,
// the log line elsewhere.
const (
	liveRefresh = time.Second
	logRefresh  = 30 * time.Second
)

// waitProgress tells the person (or the log) that `run` or `acquire` is
// waiting for a busy lock. On a terminal it keeps one line on stderr up to date
//
//	waiting for job:daily — held by host-b pid 4123 (token 17) for 2m13s, expires in 28s
//
// and clears it once the lock is acquired (before the command starts) or
// the wait ends. Off a terminal it logs when waiting starts and every 30s.
// The runner calls busy on every busy attempt (queueing engines: on every
// change of holder), so a ticker refreshes the times in between.
type waitProgress struct {
	key   string
	log   *slog.Logger
	out   io.Writer
	live  bool // out is a terminal: draw the line in place
	width func() int
	every time.Duration
	now   func() time.Time
	quiet bool
	// inspect asks the engine for the holder again when the last report is
	// stale: queueing engines report a holder only when it changes, and
	// the time it has left moves on as it renews. Set by watch; may be nil.
	inspect func(ctx context.Context, key string) (lock.Holder, bool, error)
	timeout time.Duration // bounds one inspect

	mu      sync.Mutex
	since   time.Time   // when waiting began
	h       lock.Holder // the holder last reported
	seen    time.Time   // when h was reported
	shown   bool        // a live line is on screen
	stopped bool
	stopCh  chan struct{}
}

func newWaitProgress(g *globalOptions, log *slog.Logger, key string, quiet bool) *waitProgress {
	p := &waitProgress{
		key: key, log: log, out: g.stderr, every: logRefresh, now: time.Now, quiet: quiet,
		timeout: min(g.ConnectTimeout, 2*time.Second),
		width:   func() int { return 0 },
		stopCh:  make(chan struct{}),
	}
	if f, ok := terminal(g.stderr); ok && g.LogFormat == "text" {
		p.live, p.every = true, liveRefresh
		p.width = func() int { return terminalWidth(f) }
	}
	return p
}

// busy is the runner's OnBusy callback.
func (p *waitProgress) busy(h lock.Holder) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	now := p.now()
	p.h, p.seen = h, now
	if p.since.IsZero() {
		p.since = now
		go p.tick()
		if !p.live {
			p.log.Info("waiting for lock", "key", p.key, "holder", lock.DescribeHolder(h, now), "holder_id", h.ID())
			return
		}
	}
	if p.live {
		p.draw(now)
	}
}

// tick refreshes the line (or logs again) until stopped.
func (p *waitProgress) tick() {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stopCh:
			return
		case <-t.C:
		}
		p.refresh()
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		now := p.now()
		if p.live {
			p.draw(now)
		} else {
			h := p.current(now)
			p.log.Info("still waiting for lock", "key", p.key, "waited", now.Sub(p.since).Round(time.Second).String(), "holder", lock.DescribeHolder(h, now), "holder_id", h.ID())
		}
		p.mu.Unlock()
	}
}

// refresh asks the engine for the current holder when the last report is
// older than half the refresh interval. The request runs without the lock
// held; a failed or empty answer keeps what was known.
func (p *waitProgress) refresh() {
	if p.inspect == nil {
		return
	}
	p.mu.Lock()
	fresh := p.stopped || p.now().Sub(p.seen) < p.every/2
	p.mu.Unlock()
	if fresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	h, held, err := p.inspect(ctx, p.key)
	cancel()
	if err != nil || !held {
		return
	}
	p.mu.Lock()
	p.h, p.seen = h, p.now()
	p.mu.Unlock()
}

// current is the last holder seen with its expiry counted down since. When
// the countdown runs out without news (a queueing engine reports holders
// only when they change, and the holder keeps renewing) the expiry is
// unknown rather than a made-up zero.
func (p *waitProgress) current(now time.Time) lock.Holder {
	h := p.h
	if h.ExpiresIn >= 0 {
		if left := h.ExpiresIn - now.Sub(p.seen); left > 0 {
			h.ExpiresIn = left
		} else {
			h.ExpiresIn = -1
		}
	}
	return h
}

func (p *waitProgress) line(now time.Time) string {
	return "waiting for " + printable(p.key) + " — " + printable(lock.DescribeHolder(p.current(now), now))
}

// draw rewrites the live line, cut to the terminal's width so that it
// never wraps (a wrapped line cannot be cleared in place).
func (p *waitProgress) draw(now time.Time) {
	s := p.line(now)
	if w := p.width(); w > 1 {
		if r := []rune(s); len(r) > w-1 {
			s = string(r[:w-1])
		}
	}
	fmt.Fprint(p.out, "\r\x1b[K"+s)
	p.shown = true
}

// stop ends the progress and clears the live line. Safe to call more than
// once and from any goroutine.
func (p *waitProgress) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.stopCh)
	if p.shown {
		fmt.Fprint(p.out, "\r\x1b[K")
		p.shown = false
	}
}
