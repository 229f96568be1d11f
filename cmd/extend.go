package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distlock/distlock/internal/lock"
)

type extendOptions struct {
	common
	handleOptions
	TTL time.Duration
	// ttlFlag is --ttl: only when it was not given is the TTL the
	// handle's (an explicit --ttl 0 is refused, as run refuses it).
	ttlFlag *pflag.Flag
}

func (*extendOptions) output() outputFlag {
	return formatsOf(outNone, "output format: none, shell, env or json (as acquire)", outNone, outShell, outEnv, outJSON)
}

func (o *extendOptions) flags(c *cobra.Command) {
	o.handleOptions.add(c)
	c.Flags().DurationVar(&o.TTL, "ttl", 0, "new remaining time (default: the handle's TTL)")
	o.ttlFlag = c.Flags().Lookup("ttl")
}

func newExtendCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &extendOptions{}, &cobra.Command{
		Use:   "extend [--ttl D] [--handle H] [-o none|shell|env|json]",
		Short: "Keep a lock taken by distlock acquire for longer",
		Long: `Reset the remaining time of the lock named by the handle (--handle, else
DISTLOCK_HANDLE) to --ttl (default: the TTL it was acquired with), counting
from now. The handle stays the same, so nothing is printed on stdout (a
line on stderr says how long the lock is held now); -o shell, env or json
print the handle as acquire does. Run it with the --backend and --prefix
of the acquire. Exit status: 0 extended, 64 a handle made on another
engine or prefix, 76 the handle no longer holds its lock.`,
		Args: noArgs("extend"),
	})
}

func (o *extendOptions) run(ctx context.Context, _ []string) error {
	h, err := o.handle()
	if err != nil {
		return err
	}
	ttl := o.TTL
	if !o.ttlFlag.Changed {
		ttl = h.TTL()
	}
	if ttl < time.Second {
		return lock.Invalidf("--ttl must be at least 1s, got %s", ttl)
	}
	b, l, err := o.g.resume(ctx, h, "extend")
	if errors.Is(err, lock.ErrNotHeld) {
		return staleHandle(h)
	}
	if err != nil {
		return err
	}
	defer b.Close()
	hctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	if err := l.Hold(hctx, ttl, lock.HoldHandle); errors.Is(err, lock.ErrNotHeld) {
		return staleHandle(h)
	} else if err != nil {
		return holdError(err)
	}
	if o.Output != outNone {
		nh, err := o.g.placed(l.Handle())
		if err == nil {
			err = printHandle(o.g.stdout, o.Output, nh, ttl)
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(o.g.stderr, "distlock: %s (token %d) is held for %s more\n", printable(h.Key), h.Token, ttl)
	return nil
}
