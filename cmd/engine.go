package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
)

// open connects to the engine, bounded by --connect-timeout.
func (g *globalOptions) open(ctx context.Context) (lock.Backend, error) {
	return g.openEngine(ctx, false)
}

// withEngine opens the engine, runs f on it, and closes it.
func (g *globalOptions) withEngine(ctx context.Context, f func(b lock.Backend) error) error {
	b, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	return f(b)
}

// openEngine is open; with doctor set, a file directory that cannot be
// created is left for doctor's checks to report.
func (g *globalOptions) openEngine(ctx context.Context, doctor bool) (lock.Backend, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	pw, err := backend.LoadPassword(g.PasswordFile)
	if err != nil {
		return nil, err
	}
	// The engines bound their own dial by --connect-timeout and then say
	// why they failed; the context is the backstop, a little later.
	ctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout+500*time.Millisecond)
	defer cancel()
	b, err := g.dial(ctx, g.backendURL(), backend.Options{
		Prefix: g.Prefix, ConnectTimeout: g.ConnectTimeout, Password: pw,
		EtcdCACert: g.EtcdCACert, EtcdCert: g.EtcdCert, EtcdKey: g.EtcdKey,
		Log: g.logger(), Doctor: doctor,
	})
	if err != nil {
		// An engine whose own dial timeout lost the race with ours.
		return nil, g.engineError(err)
	}
	return b, nil
}

// engineError turns an engine that did not answer in time into exit 69
// with a line saying what to do; other errors pass unchanged.
func (g *globalOptions) engineError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lock.ErrUnavailable) {
		return &lock.UnavailableError{
			Msg: fmt.Sprintf("the engine at %s did not answer within --connect-timeout %s: check that it is up and reachable, or raise --connect-timeout", g.describeBackend(), g.ConnectTimeout),
			Err: err,
		}
	}
	return err
}

// holdError is a failed Hold or Release of a handle's lock as extend,
// acquire and release report it: an engine that did not answer in time is
// exit 69, like every engine failure, its line kept whole (it says what
// became of the lock: held until it was due to expire, or for the new
// duration should the request still arrive); other errors pass unchanged.
// (Left as it was, a timeout's error was no engine error: exit 70.)
func holdError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lock.ErrUnavailable) {
		return &lock.UnavailableError{Msg: lock.FirstLine(err), Err: err}
	}
	return err
}

// list asks the engine for the held locks under prefix, bounded by
// --connect-timeout.
func (g *globalOptions) list(ctx context.Context, b lock.Backend, prefix string) ([]lock.Holder, error) {
	lctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	defer cancel()
	hs, err := b.List(lctx, prefix)
	if err != nil {
		return nil, g.engineError(err)
	}
	return hs, nil
}

// resume opens the engine and takes up the lease named by the handle. A
// handle made on another engine or prefix is refused (exit 64) before
// the engine is opened: cmd, the command, says how. A handle that no
// longer holds its lock gives an error wrapping lock.ErrNotHeld: extend
// and release each say what that means to them.
func (g *globalOptions) resume(ctx context.Context, h lock.Handle, cmd string) (lock.Backend, lock.Lease, error) {
	if err := g.validate(); err != nil {
		return nil, nil, err
	}
	where, err := backend.Locate(g.backendURL())
	if err != nil {
		return nil, nil, err
	}
	if err := h.CheckPlace(where, g.Prefix, cmd); err != nil {
		return nil, nil, err
	}
	b, err := g.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	defer cancel()
	l, err := b.Resume(rctx, h)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, l, nil
}

// placed is h, the handle of a lease taken up on the engine in use, with
// where its lock lives: that engine (backend.Locate) and --prefix.
func (g *globalOptions) placed(h lock.Handle) (lock.Handle, error) {
	where, err := backend.Locate(g.backendURL())
	if err != nil {
		return lock.Handle{}, err
	}
	return h.Placed(where, g.Prefix), nil
}
