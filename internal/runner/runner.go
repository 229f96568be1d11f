// Package runner wires one `distlock run`: acquire the lease, run the
// child while the keeper renews it, stop the child before the lease could
// pass to anyone else, and release on every way out. It is engine-neutral:
// everything it knows of the engine is a lock.Backend.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/renew"
)

// Config is one run.
type Config struct {
	Backend        lock.Backend
	BackendDesc    string // redacted URL, given to the child
	Request        lock.Request
	Wait           time.Duration // 0 once, acquire.Forever
	KillGrace      time.Duration
	ReleaseTimeout time.Duration
	Args           []string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Log            *slog.Logger
	OnBusy         func(lock.Holder) // called while waiting; may be nil
	// OnAcquired is called once the lock is held, before the command
	// starts (the waiting line must be gone by then); may be nil.
	OnAcquired func()
	// MinHold keeps the lock until acquisition + MinHold even when the
	// command ends sooner (cron replicas firing seconds apart); 0 = off.
	MinHold time.Duration
	// MaxHold stops the command at acquisition + MaxHold; 0 = off.
	MaxHold time.Duration
	// Ledger records the run in the key's run ledger; nil = none.
	Ledger Ledger
	// Env are more NAME=value variables for the command (DISTLOCK_RUN_SLOT).
	Env []string
}

// Ledger is a run's record in its key's run ledger (internal/ledger.Run).
// Begin is called once the lock is held and renewed, before the command
// starts: an error (its slot is done: *ledger.SkippedError; the ledger
// cannot be read) ends the run there, the command not started, the lock
// released. End is called once the command has ended, before the lock is
// released or kept (--min-hold), so the next holder reads it.
type Ledger interface {
	Begin(ctx context.Context, lease lock.Lease) error
	End(ctx context.Context, outcome ledger.Outcome, code int)
}

// MaxHoldError: the command ran past --max-hold and was terminated.
type MaxHoldError struct {
	Key     string
	MaxHold time.Duration
}

func (e *MaxHoldError) Error() string {
	return fmt.Sprintf("the command held %s for --max-hold %s and was terminated; the lock is released", e.Key, e.MaxHold)
}

// LostError: the lease was lost while the child ran; the child was
// stopped. NotStarted: it was lost before the command started, which
// then never did.
type LostError struct {
	Key        string
	Reason     error
	NotStarted bool
}

func (e *LostError) Error() string {
	if e.NotStarted {
		return fmt.Sprintf("lost the lock on %s before the command started: %v; the command was not started", e.Key, e.Reason)
	}
	return fmt.Sprintf("lost the lock on %s: %v; the command was terminated", e.Key, e.Reason)
}

// InterruptedError: a signal arrived before the command started, while
// acquiring or, Acquired, once the lock was held (the ledger's Begin).
type InterruptedError struct {
	Key      string
	Signal   syscall.Signal
	Acquired bool
}

func (e *InterruptedError) Error() string {
	if e.Acquired {
		return fmt.Sprintf("interrupted by %s after acquiring %s; the command was not started", child.SignalName(e.Signal), e.Key)
	}
	return fmt.Sprintf("interrupted by %s while acquiring %s; the command was not started", child.SignalName(e.Signal), e.Key)
}

// forwarded are the signals passed on to the child's group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Run performs the run and returns the child's exit status, or an error
// (busy, unavailable, lost, interrupted, start failure).
func Run(ctx context.Context, cfg Config) (int, error) {
	r := &run{cfg: cfg, log: cfg.Log}
	defer r.listen()()
	r.start = time.Now()
	defer func() { r.pre.Drop() }() // a no-op once child.Start has taken it
	if err := r.acquire(ctx); err != nil {
		return 0, err
	}
	defer r.releaseUnlessKept()
	if err := r.keep(); err != nil {
		return 0, err
	}
	defer r.keeper.Stop()
	if err := r.prestart(ctx); err != nil {
		return 0, err
	}
	if err := r.startCommand(); err != nil {
		r.record(ledger.Failed, startStatus(err))
		return 0, err
	}
	stops, stopWatching := r.watch()
	defer stopWatching()
	return r.end(r.supervise(stops))
}

// run is one Run's state, one method per phase: listen, acquire, keep,
// prestart, startCommand, watch, supervise, end.
type run struct {
	cfg   Config
	log   *slog.Logger
	sigs  chan os.Signal // forwarded to the command
	pokes chan os.Signal // SIGWINCH: check the lease now
	start time.Time
	// pre is the group watcher forked while waiting (nil if no wait).
	pre    *child.Prepared
	lease  lock.Lease
	kept   bool // the lock stays held after we exit (--min-hold)
	keeper *renew.Keeper
	// startBy is the lease's first term time, reckoned from its grant:
	// a ledger answer that came by then came while the lease was ours.
	startBy time.Time
	proc    *child.Process
	// outBy bounds the way out's engine calls once the command has
	// ended: the ledger's end, then the release or hold (wayOut); silent:
	// the engine left the ledger's end unanswered by then.
	outBy  time.Time
	silent bool
}

// listen catches the signals forwarded to the command and SIGWINCH, which
// asks us to check the lease now (documented for operators; the file
// engine's break sends it to the holder, only when sure the pid is still
// that distlock: other programs act on SIGWINCH, Apache httpd stops on
// it). It returns the undoing.
func (r *run) listen() func() {
	r.sigs = make(chan os.Signal, 8)
	signal.Notify(r.sigs, forwarded...)
	r.pokes = make(chan os.Signal, 1)
	signal.Notify(r.pokes, syscall.SIGWINCH)
	return func() {
		signal.Stop(r.pokes)
		signal.Stop(r.sigs)
	}
}

// acquire takes the lock, or gives up (busy, timed out, interrupted).
//
// A waiter forks its group watcher while it waits (on a goroutine of its
// own, from the first busy answer on), not once it has the lock: at the
// handover only the lock files are handed to it and the command started.
// Not before the first attempt: measured on a 2-core VM, a fork alongside
// the attempt delayed it by about what it saved later (the fork holds the
// address space while it copies it, and distlock then takes copy-on-write
// faults), and a busy try-once answer would pay for a fork it never uses.
// Run lets it go if the lock is not had, or the command not started.
func (r *run) acquire(ctx context.Context) error {
	acfg := r.cfg
	acfg.OnBusy = func(h lock.Holder) {
		if r.pre == nil {
			r.pre = child.PrepareWatcher() // read once acquireInterruptible has returned
		}
		if r.cfg.OnBusy != nil {
			r.cfg.OnBusy(h)
		}
	}
	lease, err := acquireInterruptible(ctx, acfg, r.sigs)
	if err != nil {
		return err
	}
	r.lease = lease
	if r.cfg.OnAcquired != nil {
		r.cfg.OnAcquired()
	}
	r.log.Info("acquired", "key", lease.Key(), "token", lease.Token(), "holder_id", lock.HolderID(lease.Owner()), "latency", time.Since(r.start).Round(time.Microsecond))
	return nil
}

// releaseUnlessKept releases the lock on every way out but a --min-hold
// that kept it.
func (r *run) releaseUnlessKept() {
	if !r.kept {
		release(r.cfg, r.lease, r.leftForRelease())
	}
}

// keep starts the keeper, which renews the lease and says when it is
// lost; a lease granted too late to leave time to run is lost already.
func (r *run) keep() error {
	timing := renew.Timing{TTL: r.cfg.Request.TTL, KillGrace: r.cfg.KillGrace, HeldWhileAlive: len(lockFiles(r.lease)) > 0}
	r.keeper = renew.Start(r.lease, timing, r.log)
	r.startBy = timing.TermAt(timing.ValidUntil(r.lease.Granted()), 0)
	if time.Now().After(r.startBy) {
		r.keeper.Stop()
		return &LostError{Key: r.lease.Key(), NotStarted: true, Reason: errors.New("the engine answered too slowly to leave time to run (raise --ttl)")}
	}
	return nil
}

// startCommand starts the command in its process group, guarded by the
// group watcher.
func (r *run) startCommand() error {
	// A lock held by an open file (the file engine's flock) is freed when
	// its last descriptor closes: the group watcher keeps copies until the
	// command's group is gone, so a SIGKILLed distlock does not free it
	// while the command is still dying.
	keep := lockFiles(r.lease)
	p, err := child.Start(child.Spec{
		Args: r.cfg.Args, Env: childEnv(r.cfg, r.lease), Unset: secretEnv,
		Stdin: r.cfg.Stdin, Stdout: r.cfg.Stdout, Stderr: r.cfg.Stderr,
		KeepOpen: keep, Watcher: r.pre,
	})
	if err != nil {
		return err
	}
	r.proc = p
	r.log.Debug("child started", "key", r.lease.Key(), "pid", p.PID())
	if err := p.WatcherError(); err != nil {
		r.log.Warn("cannot start the group watcher: if distlock is killed, grandchildren of the command may outlive the lock", "error", err)
	}
	if !child.GroupTracked() {
		r.log.Warn("/proc is not mounted or is another pid namespace's: the command's processes cannot be tracked precisely; the lock is kept while a child of distlock in its group runs, and the rest of the group gets SIGTERM when the command exits")
	}
	return nil
}

// watch turns the keeper's loss and --max-hold into Stops for the
// supervisor, and SIGWINCH into a poke of the keeper, until the returned
// function is called.
func (r *run) watch() (<-chan child.Stop, func()) {
	stops := make(chan child.Stop, 2)
	watchDone := make(chan struct{})
	var maxHold <-chan time.Time
	var maxHoldTimer *time.Timer
	if r.cfg.MaxHold > 0 {
		maxHoldTimer = time.NewTimer(time.Until(r.lease.Granted().Add(r.cfg.MaxHold)))
		maxHold = maxHoldTimer.C
	}
	go r.watchLoop(stops, maxHold, watchDone)
	return stops, func() {
		if maxHoldTimer != nil {
			maxHoldTimer.Stop()
		}
		close(watchDone)
	}
}

func (r *run) watchLoop(stops chan<- child.Stop, maxHold <-chan time.Time, done <-chan struct{}) {
	lost := r.keeper.Lost()
	for {
		select {
		case l := <-lost:
			lost = nil
			stops <- child.Stop{Reason: &LostError{Key: r.lease.Key(), Reason: l.Err}, KillAt: l.KillAt, LockLost: true}
		case <-maxHold:
			maxHold = nil
			r.log.Warn("max-hold reached", "key", r.lease.Key(), "max_hold", r.cfg.MaxHold)
			stops <- child.Stop{Reason: &MaxHoldError{Key: r.lease.Key(), MaxHold: r.cfg.MaxHold}, KillAt: time.Now().Add(r.cfg.KillGrace)}
		case <-r.pokes:
			r.keeper.Poke()
		case <-done:
			return
		}
	}
}

// supervise runs until the command's whole group is gone (and lets the
// watcher go): only then may the lock be released.
func (r *run) supervise(stops <-chan child.Stop) child.Outcome {
	out := r.proc.Supervise(child.Control{
		Signals: r.sigs, Stops: stops, KillGrace: r.cfg.KillGrace,
		Confirm: r.keeper.Confirm, Log: r.log,
	})
	if len(out.Unkillable) > 0 {
		r.log.Error("processes of the command's group that cannot be signalled still run after the lock was lost", "key", r.lease.Key(), "pids", out.Unkillable)
	}
	r.log.Info("child exited", "key", r.lease.Key(), "status", out.Code, "ran", time.Since(r.start).Round(time.Millisecond))
	return out
}

// end is the run's result: the command's status, with the reason it was
// stopped; after a command that ended by itself, --min-hold keeps the
// lock for the rest of its time.
func (r *run) end(out child.Outcome) (int, error) {
	r.record(outcomeOf(out), out.Code)
	if out.Stopped != nil {
		return out.Code, out.Stopped.Reason
	}
	if rest := r.cfg.MinHold - time.Since(r.lease.Granted()); rest > 0 {
		r.keeper.Stop()
		r.kept = holdFor(r.cfg, r.lease, rest, r.leftForRelease())
	}
	return out.Code, nil
}

// holdFor keeps the lock for d more with no renewals (--min-hold) and
// reports whether it did; if not, the caller releases as usual.
func holdFor(cfg Config, lease lock.Lease, d, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := lease.Hold(ctx, d, lock.HoldMinHold); err != nil {
		cfg.Log.Warn("min-hold: could not keep the lock; releasing it", "key", lease.Key(), "error", err)
		return false
	}
	cfg.Log.Info("min-hold: lock kept after the command", "key", lease.Key(), "for", d.Round(time.Millisecond))
	return true
}

// acquireInterruptible acquires, giving up cleanly if a terminating signal
// arrives while waiting. It returns only once the acquire has (cfg.OnBusy
// is called no more).
func acquireInterruptible(ctx context.Context, cfg Config, sigs <-chan os.Signal) (lock.Lease, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type res struct {
		l   lock.Lease
		err error
	}
	done := make(chan res, 1)
	go func() {
		l, err := acquire.Acquire(actx, cfg.Backend, cfg.Request, acquire.Options{Wait: cfg.Wait, Progress: cfg.OnBusy, Retrying: retryLogger(cfg.Log, cfg.Request.Key)})
		done <- res{l, err}
	}()
	var got syscall.Signal
	for {
		select {
		case r := <-done:
			if got != 0 {
				if r.err == nil {
					release(cfg, r.l, cfg.ReleaseTimeout)
				}
				return nil, &InterruptedError{Key: cfg.Request.Key, Signal: got}
			}
			return r.l, r.err
		case s := <-sigs:
			if sig, ok := s.(syscall.Signal); ok && sig != syscall.SIGUSR1 && sig != syscall.SIGUSR2 && got == 0 {
				got = sig
				cancel()
			}
		}
	}
}

// release gives the lock back, bounded by timeout (cfg.ReleaseTimeout, or
// what the way out has left: wayOut), and says how long it took: a slow
// engine shows in the log instead of as a distlock that seems not to exit.
func release(cfg Config, lease lock.Lease, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := lease.Release(ctx)
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case err == nil && took >= slowRelease:
		cfg.Log.Warn("released, slowly: the engine is slow to answer", "key", lease.Key(), "token", lease.Token(), "took", took)
	case err == nil:
		cfg.Log.Info("released", "key", lease.Key(), "token", lease.Token(), "took", took)
	case errors.Is(err, lock.ErrNotHeld):
		cfg.Log.Info("release: the lock was no longer ours", "key", lease.Key(), "token", lease.Token(), "took", took)
	default:
		cfg.Log.Warn("release failed; the lease will expire by itself", "key", lease.Key(), "ttl", cfg.Request.TTL, "took", took, "error", err)
	}
}

// slowRelease is when a successful release is worth a warning.
const slowRelease = time.Second

// secretEnv are variables of distlock's environment meant for distlock
// alone: the command does not inherit them. (A password from the URL or
// --password-file never reaches it either: DISTLOCK_BACKEND is redacted.)
var secretEnv = []string{"DISTLOCK_PASSWORD"}

func childEnv(cfg Config, lease lock.Lease) []string {
	env := []string{
		"DISTLOCK_KEY=" + lease.Key(),
		"DISTLOCK_TOKEN=" + strconv.FormatUint(lease.Token(), 10),
		"DISTLOCK_OWNER=" + lease.Owner(),
		"DISTLOCK_TTL=" + strconv.FormatFloat(cfg.Request.TTL.Seconds(), 'f', -1, 64),
		"DISTLOCK_BACKEND=" + cfg.BackendDesc,
	}
	if s, ok := lease.(lock.Slotted); ok && cfg.Request.Limit > 1 {
		env = append(env, "DISTLOCK_SLOT="+strconv.Itoa(s.Slot()))
	}
	return append(env, cfg.Env...)
}

// retryLogger logs each transient engine error a wait rides out.
func retryLogger(log *slog.Logger, key string) func(error, int, time.Duration) {
	return func(err error, attempt int, next time.Duration) {
		log.Warn("engine error while waiting; trying again", "key", key, "attempt", attempt, "in", next.Round(time.Millisecond), "error", err)
	}
}

// lockFiles is the open files that hold l's lock (lock.FileLocked), nil
// when its lock is not on open files.
func lockFiles(l lock.Lease) []*os.File {
	if fl, ok := l.(lock.FileLocked); ok {
		return fl.LockFiles()
	}
	return nil
}
