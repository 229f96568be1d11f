package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// holderRun is one `distlock run -v … -- cat FIFO` of the many-holders
// measurement: its command blocks until the bench closes the FIFO's
// writing end, then exits 0.
type holderRun struct {
	cmd *exec.Cmd
	log *os.File // a copy of its log (-holder-logs), or nil

	mu       sync.Mutex
	acquired time.Time   // its "acquired" log line; zero before
	renewed  []time.Time // its "renewed" log lines
	failure  string      // its first error line (or error log line)
	failedAt time.Time
	done     chan struct{} // closed once stderr is read to the end
	exitErr  error         // once done and waited
	exited   bool
}

// start launches the run and reads its log.
func (h *holderRun) start() error {
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := h.cmd.Start(); err != nil {
		return err
	}
	h.done = make(chan struct{})
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			h.line(s.Text(), time.Now())
			if h.log != nil {
				fmt.Fprintf(h.log, "%s %s\n", time.Now().Format("15:04:05.000"), s.Text())
			}
		}
		if h.log != nil {
			h.log.Close()
		}
		h.exitErr = h.cmd.Wait()
		h.mu.Lock()
		h.exited = true
		h.mu.Unlock()
		close(h.done)
	}()
	return nil
}

// line records one log line of the run.
func (h *holderRun) line(l string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case strings.Contains(l, " msg=acquired "):
		h.acquired = now
	case strings.Contains(l, " msg=renewed "):
		h.renewed = append(h.renewed, now)
	case h.failure == "" && (strings.HasPrefix(l, "distlock: ") || strings.Contains(l, " level=ERROR ")):
		h.failure, h.failedAt = l, now
	}
}

// state is whether the run has acquired, and whether it has ended.
func (h *holderRun) state() (acquired, ended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.acquired.IsZero(), h.exited
}

// renewalsIn counts its renewals logged in [t0, t1).
func (h *holderRun) renewalsIn(t0, t1 time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.renewed {
		if !t.Before(t0) && t.Before(t1) {
			n++
		}
	}
	return n
}

// holderLogs is -holder-logs: a directory to keep each holder's log in.
var holderLogs string

// holderFleet is n holders of distinct keys sharing one FIFO.
type holderFleet struct {
	runs  []*holderRun
	fifo  string
	write *os.File // the FIFO's writing end: closing it ends every command
}

// launchFleet starts n holders of keys scale-<tag>-<i> on e, all at once.
func launchFleet(tmp, bin string, e engine, n int, ttl time.Duration, tag string) (*holderFleet, error) {
	f := &holderFleet{fifo: filepath.Join(tmp, "fifo-"+tag)}
	if err := syscall.Mkfifo(f.fifo, 0o600); err != nil {
		return nil, err
	}
	// Opened for reading and writing, it does not block, and the
	// commands' reads block until it is closed.
	w, err := os.OpenFile(f.fifo, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	f.write = w
	for i := range n {
		c := exec.Command(bin, "-v", "--backend", e.url, "run", "--key", fmt.Sprintf("scale-%s-%d", tag, i), "--ttl", ttl.String(), "--", "cat", f.fifo)
		h := &holderRun{cmd: c}
		if holderLogs != "" {
			if h.log, err = os.Create(filepath.Join(holderLogs, fmt.Sprintf("%s-%d.log", tag, i))); err != nil {
				f.stop(time.Second)
				return nil, err
			}
		}
		if err := h.start(); err != nil {
			f.stop(time.Second)
			return nil, err
		}
		f.runs = append(f.runs, h)
	}
	return f, nil
}

// waitAcquired waits until every run has acquired or ended, or until
// the deadline; it returns how many acquired and when the last did.
func (f *holderFleet) waitAcquired(deadline time.Duration) (int, time.Time) {
	end := time.Now().Add(deadline)
	for {
		acquired, settled := 0, 0
		for _, h := range f.runs {
			a, e := h.state()
			if a {
				acquired++
			}
			if a || e {
				settled++
			}
		}
		if settled == len(f.runs) || time.Now().After(end) {
			var last time.Time
			for _, h := range f.runs {
				h.mu.Lock()
				if h.acquired.After(last) {
					last = h.acquired
				}
				h.mu.Unlock()
			}
			return acquired, last
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends every command (the FIFO closes), waits up to grace for the
// runs to exit, then kills what is left; it returns how many exited 0.
func (f *holderFleet) stop(grace time.Duration) int {
	f.write.Close()
	deadline := time.Now().Add(grace)
	ok := 0
	for _, h := range f.runs {
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-h.done:
		case <-t.C:
			h.cmd.Process.Kill()
			<-h.done
		}
		t.Stop()
		if h.exitErr == nil {
			ok++
		}
	}
	os.Remove(f.fifo)
	return ok
}

// firstFailure is the earliest error line of any run (else the first
// failed exit), with how many runs failed: an error line, no acquire, or
// an exit other than 0.
func (f *holderFleet) firstFailure() (string, int) {
	var first, exit string
	var at time.Time
	failed := 0
	for _, h := range f.runs {
		h.mu.Lock()
		badExit := h.exited && h.exitErr != nil
		if h.failure != "" || h.acquired.IsZero() || badExit {
			failed++
		}
		if h.failure != "" && (first == "" || h.failedAt.Before(at)) {
			first, at = h.failure, h.failedAt
		}
		if badExit && exit == "" {
			exit = "exit: " + h.exitErr.Error()
		}
		h.mu.Unlock()
	}
	if first == "" {
		first = exit
	}
	return first, failed
}
