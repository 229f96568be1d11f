package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
)

type extendOptions struct {
	g *globalOptions
	handleOptions
	TTL time.Duration
}

func newExtendCommand(g *globalOptions) *cobra.Command {
	o := &extendOptions{g: g}
	c := &cobra.Command{
		Use:   "extend [--ttl D] [--handle H]",
		Short: "Keep a lock taken by distlock acquire for longer",
		Long: `Reset the remaining time of the lock named by the handle (--handle, else
DISTLOCK_HANDLE) to --ttl (default: the TTL it was acquired with), counting
from now. Prints the handle lines again. Exit status: 0 extended, 76 the
handle no longer holds its lock.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return errors.New("extend takes no arguments")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context()) },
	}
	c.Flags().StringVar(&o.Handle, "handle", "", "the DISTLOCK_HANDLE printed by acquire (default $DISTLOCK_HANDLE)")
	c.Flags().DurationVar(&o.TTL, "ttl", 0, "new remaining time (default: the handle's TTL)")
	return c
}

func (o *extendOptions) run(ctx context.Context) error {
	h, err := o.handle()
	if err != nil {
		return err
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = h.TTL()
	}
	if ttl < time.Second {
		return lock.Invalidf("--ttl must be at least 1s, got %s", ttl)
	}
	b, l, err := o.g.resume(ctx, h)
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
		return err
	}
	printHandle(o.g.stdout, l.Handle())
	fmt.Fprintf(o.g.stderr, "distlock: %s (token %d) is held for %s more\n", h.Key, h.Token, ttl)
	return nil
}
