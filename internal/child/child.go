// Package child starts the command in its own process group, forwards
// signals to the group, escalates TERM to KILL, makes sure nothing of the
// group is left running when it returns, and turns the command's end into
// an exit status. It knows nothing of engines.
package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
)

// Spec is the command to run.
type Spec struct {
	Args   []string
	Env    []string // KEY=VALUE pairs added to the inherited environment; they win
	Unset  []string // names removed from the inherited environment (distlock's own secrets)
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// StartError is a command that could not be started: it does not exist
// (NotFound), or it exists but cannot be executed.
type StartError struct {
	NotFound bool
	Msg      string
}

func (e *StartError) Error() string { return e.Msg }

// Process is a running command and its process group.
type Process struct {
	cmd  *exec.Cmd
	pgid int
	done chan struct{} // closed once the leader has been reaped
	code int           // exit status, valid after done
}

// Start starts spec. The fork happens on a goroutine that keeps its OS
// thread locked until the child is reaped: Pdeathsig fires when the forking
// *thread* exits, not the process (golang/go#27505).
func Start(spec Spec) (*Process, error) {
	if len(spec.Args) == 0 {
		return nil, errors.New("no command given")
	}
	c := exec.Command(spec.Args[0], spec.Args[1:]...)
	c.Env = MergeEnv(WithoutEnv(os.Environ(), spec.Unset...), spec.Env)
	c.Stdin, c.Stdout, c.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	c.SysProcAttr = sysProcAttr()
	prepareReaping()

	p := &Process{cmd: c, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := c.Start(); err != nil {
			started <- err
			return
		}
		p.pgid = c.Process.Pid
		started <- nil
		p.code = exitStatus(c.Wait(), c.ProcessState)
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, startError(spec.Args[0], err)
	}
	return p, nil
}

// PID is the leader's process id (and the group id).
func (p *Process) PID() int { return p.pgid }

// Done is closed when the leader has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Signal sends sig to the whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(-p.pgid, sig)
}

// groupAlive reports whether any process of the group is still there,
// reaping the ones that were left to us first.
func (p *Process) groupAlive() bool {
	reapGroup(p.pgid)
	return syscall.Kill(-p.pgid, 0) == nil
}

// UnknownStatus is the exit status reported when the command's end could
// not be observed (waiting for it failed).
const UnknownStatus = -1

func exitStatus(err error, st *os.ProcessState) int {
	if st == nil {
		return UnknownStatus
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

func startError(name string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return &StartError{NotFound: true, Msg: fmt.Sprintf("command not found: %s", name)}
	case errors.Is(err, os.ErrPermission), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		return &StartError{Msg: fmt.Sprintf("command cannot be executed: %s (%v)", name, errors.Unwrap(err))}
	default:
		return &StartError{Msg: fmt.Sprintf("cannot start %s: %v", name, err)}
	}
}

// MergeEnv returns base with extra's variables set, extra winning over any
// inherited value of the same name.
func MergeEnv(base, extra []string) []string {
	names := make(map[string]bool, len(extra))
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
