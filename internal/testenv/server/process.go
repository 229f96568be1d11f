// Package server starts and controls real server binaries (redis-server,
// etcd, ZooKeeper, PostgreSQL, MariaDB) for tests: each runs on free
// loopback ports in its own process group, dies with the test process, and
// can be paused (SIGSTOP), resumed, killed and restarted on the same ports.
// Unix only.
package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// errExited: the child exited before it answered (e.g. its port was taken
// between choosing and binding it).
var errExited = errors.New("exited before answering")

// startTimeout bounds how long a start or restart waits for the server to
// answer.
const startTimeout = 20 * time.Second

// stopTimeout bounds how long Stop waits for all threads to stop.
const stopTimeout = 10 * time.Second

// spec describes how to run one server with fixed ports.
type spec struct {
	name    string   // for messages: "redis-server", "etcd"
	bin     string   // resolved path of the binary
	dir     string   // working directory
	args    []string // complete argument list
	env     []string
	logPath string
	addr    string // client endpoint "127.0.0.1:port"
	// cred, when set, runs the server as another user: servers that refuse
	// to run as root (PostgreSQL, MariaDB) get an unprivileged one.
	cred *syscall.Credential
	// probe reports nil once our server (the child with process id pid)
	// answers on addr. It must check identity, not just an answer: when a
	// port is taken by someone else between choosing and binding it, our
	// child exits while the other server answers.
	probe func(ctx context.Context, pid int) error
}

// Process is one running (or stopped, or killed) server. All methods are
// safe for concurrent use.
type Process struct {
	spec spec

	// cleanup removes what the server kept outside the caller's dir (a
	// private data directory); Close runs it once the server is dead.
	cleanup func() error

	mu      sync.Mutex
	pid     int
	done    chan struct{} // closed once the current child has been reaped
	closed  bool
	stopped []int // the processes Stop stopped, for Cont
}

// Addr is the client endpoint, "127.0.0.1:port". It stays the same across
// Restart.
func (p *Process) Addr() string { return p.spec.addr }

// Dir is the working directory the server runs in (a redis-server keeps
// its dump.rdb there). It stays the same across Restart.
func (p *Process) Dir() string { return p.spec.dir }

// Stop pauses the server's whole process group with SIGSTOP, and on Linux
// every descendant that left the group too (PostgreSQL's backends), and
// returns only once every thread of them has stopped, so that no request
// is answered after Stop returns.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.signalLocked(syscall.SIGSTOP); err != nil {
		return err
	}
	if err := waitStopped(p.pid, stopTimeout); err != nil {
		return fmt.Errorf("%s: %w", p.spec.name, err)
	}
	p.stopped, _ = serverProcs(p.pid) // stopped processes cannot fork: the list stays true
	return nil
}

// Cont resumes the server's processes with SIGCONT: the ones Stop stopped,
// at once (no search, which can take tens of milliseconds on a busy
// machine: tests ask the server something right after Cont), or else
// every process of the server.
func (p *Process) Cont() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("%s: not running", p.spec.name)
	}
	stopped := p.stopped
	p.stopped = nil
	if stopped == nil {
		return p.signalLocked(syscall.SIGCONT)
	}
	if err := syscall.Kill(-p.pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: signal %v: %w", p.spec.name, syscall.SIGCONT, err)
	}
	for _, pid := range stopped {
		// Stopped, so not exited: the pid is still the one we stopped
		// (unless someone else killed it meanwhile).
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	return nil
}

// Kill sends SIGKILL to the server's processes (as Stop finds them) and
// waits until the server has been reaped and, on Linux, every one of them
// is gone (a PostgreSQL backend that outlived its postmaster would keep the
// old shared memory in use and stop a restart). Killing a server that has already exited is not an
// error.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

// Restart kills the server if it is running, then starts it again on the
// same port(s) and waits until it answers. Redis comes back empty; etcd,
// ZooKeeper, PostgreSQL and MariaDB keep their data directories.
func (p *Process) Restart() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("%s: restart after Close", p.spec.name)
	}
	if err := p.killLocked(); err != nil {
		return err
	}
	return p.startLocked()
}

// RestartWithEnv is Restart with extra variables ("K=V") added to the
// server's environment for this and every later start: e.g. Debian's
// faketime (LD_PRELOAD=libfaketime.so.1, FAKETIME_TIMESTAMP_FILE) to jump
// the server's clock while it runs.
func (p *Process) RestartWithEnv(extra []string) error {
	p.mu.Lock()
	p.spec.env = append(append([]string(nil), p.spec.env...), extra...)
	p.mu.Unlock()
	return p.Restart()
}

// Close kills the server, reaps it and removes any private data directory
// it had outside the caller's dir. It is idempotent.
func (p *Process) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.killLocked()
	if p.cleanup != nil && err == nil {
		err = p.cleanup()
	}
	return err
}

// startFresh chooses nports free ports, builds a spec on them, launches it
// and waits until it answers. A child that exits before answering most
// likely lost a race for its port, so it is retried on other ports a few
// times. On failure nothing is left running, and cleanup (may be nil: it
// removes a server's private data directory) runs at once; else it runs at
// Close.
func startFresh(nports int, cleanup func() error, build func(ports []int) (spec, error)) (*Process, error) {
	const attempts = 3
	var err error
	for i := 0; i < attempts; i++ {
		var ports []int
		if ports, err = freePorts(nports); err != nil {
			break
		}
		var s spec
		if s, err = build(ports); err != nil {
			break
		}
		p := &Process{spec: s, cleanup: cleanup}
		p.mu.Lock()
		err = p.startLocked()
		p.mu.Unlock()
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, errExited) {
			break
		}
	}
	if cleanup != nil {
		_ = cleanup()
	}
	return nil, err
}

func (p *Process) runningLocked() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *Process) signalLocked(sig syscall.Signal) error {
	if !p.runningLocked() {
		return fmt.Errorf("%s: not running", p.spec.name)
	}
	// The child leads its own process group (Setpgid); signalTree reaches
	// the group and every descendant that left it. The child has not been
	// reaped (done is open), so the pid is still ours.
	if err := signalTree(p.pid, sig); err != nil {
		return fmt.Errorf("%s: signal %v: %w", p.spec.name, sig, err)
	}
	return nil
}

func (p *Process) killLocked() error {
	p.stopped = nil
	if !p.runningLocked() {
		return nil
	}
	// Freeze the server first, so that none of its processes forks, then
	// kill what was found: once the leader is dead its descendants are
	// orphans, no longer to be found from it.
	_ = signalTree(p.pid, syscall.SIGSTOP)
	procs, _ := serverProcs(p.pid)
	err := syscall.Kill(-p.pid, syscall.SIGKILL)
	for _, pid := range procs {
		if kerr := syscall.Kill(pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			err = kerr
		}
	}
	<-p.done
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: kill: %w", p.spec.name, err)
	}
	if err := waitGone(procs, stopTimeout); err != nil {
		return fmt.Errorf("%s: %w", p.spec.name, err)
	}
	return nil
}

// startLocked launches the child and waits until it answers; on failure the
// child is killed again.
func (p *Process) startLocked() error {
	if err := p.launchLocked(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := waitReady(ctx, p.spec, p.pid, p.done); err != nil {
		_ = p.killLocked()
		return err
	}
	return nil
}

// launchLocked starts the child from a goroutine locked to its OS thread
// and keeps that thread until the child is reaped: Pdeathsig fires when the
// forking thread exits, not the process (golang/go#27505).
func (p *Process) launchLocked() error {
	logf, err := os.OpenFile(p.spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.spec.name, err)
	}
	defer logf.Close() // the child has its own copy once started

	cmd := exec.Command(p.spec.bin, p.spec.args...)
	cmd.Dir = p.spec.dir
	cmd.Env = p.spec.env
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	cmd.SysProcAttr.Credential = p.spec.cred

	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // exit status is uninteresting: we kill it ourselves
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("%s: start: %w", p.spec.name, err)
	}
	p.pid = cmd.Process.Pid
	p.done = done
	return nil
}

// waitReady polls s.probe until it succeeds, the child exits, or ctx ends.
func waitReady(ctx context.Context, s spec, pid int, exited <-chan struct{}) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = s.probe(pctx, pid)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s %w on %s; log %s:\n%s",
				s.name, errExited, s.addr, s.logPath, logTail(s.logPath))
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s within %v (last: %v); log %s:\n%s",
				s.name, s.addr, time.Since(start).Round(time.Second), last, s.logPath, logTail(s.logPath))
		case <-tick.C:
		}
	}
}

// logTail returns the last few KiB of a log file for error messages.
func logTail(path string) string {
	const max = 4 << 10
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
