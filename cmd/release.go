package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
)

type releaseOptions struct {
	g *globalOptions
	handleOptions
}

func newReleaseCommand(g *globalOptions) *cobra.Command {
	o := &releaseOptions{g: g}
	c := &cobra.Command{
		Use:   "release [--handle H]",
		Short: "Release a lock taken by distlock acquire",
		Long: `Release the lock named by the handle (--handle, else DISTLOCK_HANDLE), if
it still holds it. Exit status: 0 released, 76 the handle no longer holds
its lock (it expired, was broken or was taken over).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return errors.New("release takes no arguments")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context()) },
	}
	c.Flags().StringVar(&o.Handle, "handle", "", "the DISTLOCK_HANDLE printed by acquire (default $DISTLOCK_HANDLE)")
	return c
}

func (o *releaseOptions) run(ctx context.Context) error {
	h, err := o.handle()
	if err != nil {
		return err
	}
	b, l, err := o.g.resume(ctx, h)
	if err != nil {
		return err
	}
	defer b.Close()
	rctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	if err := l.Release(rctx); errors.Is(err, lock.ErrNotHeld) {
		return staleHandle(h)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(o.g.stderr, "distlock: released %s (token %d)\n", h.Key, h.Token)
	return nil
}
