package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
)

type acquireOptions struct {
	common
	lockFlags
}

func (*acquireOptions) output() outputFlag {
	return formatsOf(outShell, "output format: shell (export lines), env (NAME=value lines) or json", outShell, outEnv, outJSON)
}

func (o *acquireOptions) flags(c *cobra.Command) {
	o.lockFlags.add(c, 30*time.Minute, "how long the lock stays held unless extended or released (at least 1s)")
}

func newAcquireCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &acquireOptions{}, &cobra.Command{
		Use:   "acquire --key KEY [--ttl D] [--wait D] [-o shell|env|json]",
		Short: "Take a lock and keep it after exiting, for use across CI steps",
		Long: `Take the lock on KEY and leave it held for --ttl after distlock exits, so
that several separate steps (of a CI job, say) run under one lock. Prints
the handle, which extend and release need, and the fencing token:

  -o shell (default)  export DISTLOCK_HANDLE=... and export DISTLOCK_TOKEN=...
                      lines, for eval or for a file a later shell sources
  -o env              DISTLOCK_HANDLE=... and DISTLOCK_TOKEN=... lines, for
                      >> "$GITHUB_ENV" or a dotenv file
  -o json             {"key","token","ttl_ms","handle"}

The handle lets whoever has it extend or release the lock: keep it out of
logs. Nothing renews the lock: extend it with distlock extend, end it with
distlock release. While it waits (--wait) it says so on stderr: a live line
on a terminal, else a log line at once and every 30s.
Exit status: 0 acquired, 75 busy (--busy-exit-code).`,
		Example: `  # two lines, not eval "$(...)": eval of nothing succeeds, and a busy
  # acquire would not stop a set -e script
  lock=$(distlock acquire --key deploy:prod --ttl 30m --wait 10m)
  eval "$lock"
  distlock acquire --key deploy:prod --ttl 30m -o env >> "$GITHUB_ENV"`,
		Args: noArgs("acquire"),
	})
}

func (o *acquireOptions) run(ctx context.Context, _ []string) error {
	wait, err := o.lockFlags.check()
	if err != nil {
		return err
	}
	return o.g.withEngine(ctx, func(b lock.Backend) error { return o.hold(ctx, b, wait) })
}

// hold takes the lock on b and holds it for --ttl with no one renewing it,
// then prints its handle.
func (o *acquireOptions) hold(ctx context.Context, b lock.Backend, wait time.Duration) error {
	req, err := newRequest(o.Key, o.TTL, 1, "distlock acquire", o.Note)
	if err != nil {
		return err
	}
	req.HeldAtOnce = true // held (Hold) at once below, never renewed
	// Where the lock lives, for the handle: release and extend check it.
	where, err := backend.Locate(o.g.backendURL())
	if err != nil {
		return err
	}
	l, err := o.take(ctx, b, req, wait)
	if busy := o.busy(err, wait); busy != nil {
		return busy
	}
	if err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	if err := l.Hold(hctx, o.TTL, lock.HoldHandle); err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), o.g.ConnectTimeout)
		defer rcancel()
		l.Release(rctx)
		return holdError(err)
	}
	return printHandle(o.g.stdout, o.Output, l.Handle().Placed(where, o.g.Prefix), o.TTL)
}

// take acquires the lock, saying on stderr that it waits while it does
// (as run does: a live line on a terminal, else a log line at once and
// every 30s), and clearing the live line before anything is printed.
func (o *acquireOptions) take(ctx context.Context, b lock.Backend, req lock.Request, wait time.Duration) (lock.Lease, error) {
	log := o.g.logger()
	wp := newWaitProgress(o.g, o.g.waitLogger(), o.Key, o.Quiet)
	wp.inspect = b.Inspect
	defer wp.stop()
	return acquire.Acquire(ctx, b, req, acquire.Options{Wait: wait, Progress: wp.busy, Retrying: func(err error, attempt int, next time.Duration) {
		log.Warn("engine error while waiting; trying again", "key", o.Key, "attempt", attempt, "in", next.Round(time.Millisecond), "error", err)
	}})
}
