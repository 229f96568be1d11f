// Package child starts the command in its own process group (in the
// terminal's foreground when distlock has the terminal), forwards signals
// to the group, escalates TERM to KILL, handles job control (Ctrl-Z, fg),
// makes sure nothing of the group is left running when it returns, and
// turns the command's end into an exit status. It knows nothing of
// engines.
package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Spec is the command to run.
type Spec struct {
	Args   []string
	Env    []string // KEY=VALUE pairs added to the inherited environment; they win
	Unset  []string // names removed from the inherited environment (distlock's own secrets)
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// KeepOpen are files the group watcher keeps open until no process of
	// the command's group is left, even when distlock dies first: the
	// lease's lock files when the engine's lock is an open file's
	// (lock.FileLocked). The watcher never reads, writes or unlocks them.
	KeepOpen []*os.File
	// Watcher is the group watcher prepared ahead (PrepareWatcher), which
	// Start takes and hands KeepOpen; nil: Start starts one itself. If
	// Start fails before it takes it, the caller's Drop lets it go.
	Watcher *Prepared
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
	pid  int           // the command's
	pgid int           // its group's: the watcher's pin's (Linux) or pid
	done chan struct{} // closed once the command has been reaped
	code int           // exit status, valid after done
	sig  bool          // it died of a signal (code is 128+N), valid after done

	watcher  *watcher // nil when it could not start
	watchErr error
	term     *terminal      // the controlling terminal; nil without one
	jobSigs  chan os.Signal // SIGTSTP and SIGCHLD while the command runs
	known    []int          // members seen running at the last full look
}

// Start starts spec in a process group of its own, made by the group
// watcher (watch.go) on Linux, in the terminal's foreground when distlock
// has it. The fork happens on a goroutine that keeps its OS thread locked
// until the child is reaped: Pdeathsig fires when the forking *thread*
// exits, not the process (golang/go#27505).
func Start(spec Spec) (*Process, error) {
	if len(spec.Args) == 0 {
		return nil, errors.New("no command given")
	}
	prepareReaping()
	p := &Process{done: make(chan struct{}), jobSigs: make(chan os.Signal, 8)}
	p.term = openTerminal()
	foreground := p.term != nil && p.term.ours()
	// From here on a stop signal must never stop distlock while its
	// command runs: distlock's keeper would be frozen while the command
	// ran on. SIGTSTP is caught (Supervise stops the command's group
	// first); SIGTTIN and SIGTTOU are ignored below.
	signal.Notify(p.jobSigs, syscall.SIGTSTP, syscall.SIGCHLD)
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// On Linux the watcher comes first and makes the command's group:
		// the one prepared ahead, handed the lock files now.
		var pgid int
		if watcherLeads {
			p.watcher, p.watchErr = groupWatcher(spec.Watcher, spec.KeepOpen)
			if p.watcher != nil {
				pgid = p.watcher.pgid
			}
		}
		c, err := startCommand(spec, pgid, p.term, foreground)
		if err != nil && foreground {
			// The terminal could not be handed over (it went away?):
			// run the command as if there were none.
			c, err = startCommand(spec, pgid, nil, false)
		}
		if err != nil {
			p.watcher.release()
			started <- err
			return
		}
		p.cmd, p.pid, p.pgid = c, c.Process.Pid, pgid
		if pgid == 0 {
			p.pgid = p.pid
		}
		// Ignored, not caught: distlock writing its log to the terminal
		// from the background (stty tostop), or giving the terminal back,
		// would otherwise stop it, or with a handler retry for ever. Only
		// now, as an ignored signal stays ignored across exec: the command
		// must not inherit it. It stays ignored for the rest of the
		// process, which starts nothing else (but a watcher, which
		// ignores it anyway).
		signal.Ignore(syscall.SIGTTIN, syscall.SIGTTOU)
		if !watcherLeads {
			// Before the command can be reaped: its group's number is
			// still the command's.
			p.watcher, p.watchErr = startWatcher(p.pgid, spec.KeepOpen)
		}
		started <- nil
		p.code, p.sig = exitStatus(c.Wait(), c.ProcessState)
		close(p.done)
	}()
	if err := <-started; err != nil {
		signal.Stop(p.jobSigs)
		if p.term != nil {
			p.term.close()
		}
		return nil, startError(spec.Args[0], err)
	}
	return p, nil
}

// startCommand starts the command in process group pgid (the watcher's),
// or in a group of its own when pgid is 0; with foreground, the child
// makes its group the terminal's foreground group before it runs (SIGTTOU
// is blocked there), as a shell does for a foreground job.
func startCommand(spec Spec, pgid int, term *terminal, foreground bool) (*exec.Cmd, error) {
	c := exec.Command(spec.Args[0], spec.Args[1:]...)
	c.Env = MergeEnv(WithoutEnv(os.Environ(), spec.Unset...), spec.Env)
	c.Stdin, c.Stdout, c.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	c.SysProcAttr = sysProcAttr()
	c.SysProcAttr.Pgid = pgid
	if foreground {
		c.SysProcAttr.Foreground = true
		c.SysProcAttr.Ctty = term.fd
	}
	return c, c.Start()
}

// PID is the command's process id.
func (p *Process) PID() int { return p.pid }

// Done is closed when the command has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// WatcherError says why the group watcher could not start (nil if it
// did). Without it a SIGKILLed distlock leaves the command's grandchildren
// running, and the number of a vanished group could be signalled.
func (p *Process) WatcherError() error { return p.watchErr }

// Signal sends sig to the command's process group (see signalGroup).
func (p *Process) Signal(sig syscall.Signal) error { return p.signalGroup(sig) }

// takeTerminal gives the terminal back to distlock's group if the
// command's group has it (never taking it from anyone else: a shell that
// has it after distlock was put in the background keeps it).
func (p *Process) takeTerminal() {
	if p.term != nil && p.term.foreground() == p.pgid {
		p.term.setForeground(unix.Getpgrp())
	}
}

// continueGroup gives the terminal to the command's group if distlock
// has it (continued in the foreground: fg), then continues the group.
func (p *Process) continueGroup() {
	if p.term != nil && p.term.ours() {
		p.term.setForeground(p.pgid)
	}
	p.signalGroup(syscall.SIGCONT)
}

// finish is the end of a run: the terminal goes back to distlock, the
// job-control signals are let go, and the watcher is told goodbye (the
// group is gone; distlock signals it no more).
func (p *Process) finish() {
	p.takeTerminal()
	signal.Stop(p.jobSigs)
	if p.term != nil {
		p.term.close()
	}
	p.watcher.release()
}

// UnknownStatus is the exit status reported when the command's end could
// not be observed (waiting for it failed).
const UnknownStatus = -1

// exitStatus is the command's status and whether it died of a signal.
func exitStatus(err error, st *os.ProcessState) (int, bool) {
	if st == nil {
		return UnknownStatus, false
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return st.ExitCode(), false
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
