package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// workload is C contenders, each looping `distlock run` on one key with
// the probe as the command, until stopped.
type workload struct {
	bin, self, key, regAddr string
	ttl                     time.Duration
	limit                   int
	handle                  bool // mode handle: acquire / probe+extend / release
	url                     func(contender int) string

	contenders int
	arrivals   int // newcomers started so far (arrive)

	stop  atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	cur   map[int]*exec.Cmd
	exits map[string]int // distlock's exit statuses, counted
}

func (w *workload) start(contenders int) {
	w.cur, w.exits = map[int]*exec.Cmd{}, map[string]int{}
	w.contenders = contenders
	for i := range contenders {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for !w.stop.Load() {
				w.round(i)
			}
		}()
	}
}

// round is one run of contender i, as its mode makes it.
func (w *workload) round(i int) {
	if w.handle {
		w.onceHandle(i)
	} else {
		w.once(i)
	}
}

// arrive starts one newcomer: a run of its own (numbered past the looping
// contenders), once, as a cron entry firing on another machine would. It
// is called by the injector only (one goroutine), before finish.
func (w *workload) arrive() {
	i := w.contenders + w.arrivals
	w.arrivals++
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.round(i)
	}()
}

// command is one `distlock run` of contender i.
func (w *workload) command(i int) *exec.Cmd {
	args := []string{"--backend", w.url(i), "--connect-timeout", "2s", "run", "--key", w.key,
		"--ttl", w.ttl.String(), "--wait", "3s", "--quiet"}
	if w.limit > 1 {
		args = append(args, "--limit", strconv.Itoa(w.limit))
	}
	args = append(args, "--", w.self, "probe", "--addr", w.regAddr, "--contender", strconv.Itoa(i),
		"--launched", strconv.FormatInt(time.Now().UnixNano(), 10))
	return exec.Command(w.bin, args...)
}

// once runs contender i's distlock once.
func (w *workload) once(i int) {
	if code := w.runTracked(i, w.command(i), ""); code != 0 && code != 75 {
		time.Sleep(50 * time.Millisecond) // engine down: do not spin
	}
}

func (w *workload) count(k string) {
	w.mu.Lock()
	w.exits[k]++
	w.mu.Unlock()
}

// signal sends sig to contender i's running distlock.
func (w *workload) signal(i int, sig syscall.Signal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.cur[i]
	if c == nil {
		return fmt.Errorf("contender %d runs no distlock", i)
	}
	return c.Process.Signal(sig)
}

// finish stops starting runs and waits for the running ones, at most
// grace; then it SIGKILLs what is left (counted as "hung") and waits.
func (w *workload) finish(grace time.Duration) {
	w.stop.Store(true)
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	w.mu.Lock()
	for _, c := range w.cur {
		c.Process.Signal(syscall.SIGCONT)
		c.Process.Kill()
		w.exits["hung"]++
	}
	w.mu.Unlock()
	<-done
}

func (w *workload) exitCounts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]int, len(w.exits))
	for k, v := range w.exits {
		m[k] = v
	}
	return m
}

func exitCode(c *exec.Cmd, err error) int {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return c.ProcessState.ExitCode()
}
