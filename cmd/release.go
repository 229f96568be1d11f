package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
)

type releaseOptions struct {
	common
	handleOptions
	Strict bool
}

func (o *releaseOptions) flags(c *cobra.Command) {
	o.handleOptions.add(c)
	c.Flags().BoolVar(&o.Strict, "strict", false, "exit 76 when the handle's lock is already gone")
}

func (*releaseOptions) output() outputFlag { return textOrJSON }

func newReleaseCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &releaseOptions{}, &cobra.Command{
		Use:   "release [--handle H] [--strict] [-o text|json]",
		Short: "Release a lock taken by distlock acquire",
		Long: `Release the lock named by the handle (--handle, else DISTLOCK_HANDLE), if
it still holds it. A handle whose lock is already gone (it expired, was
broken, was taken over, or was released before) has nothing to release:
release says so and succeeds, so that a cleanup step that always runs
stays green; --strict makes that exit 76.
-o json prints {"key","token","released"}: released is false when the
lock was already gone. Run it with the --backend and --prefix of the
acquire: a handle made on another engine or prefix is refused (64), its
lock would not be found there.
Exit status: 0 released or already gone, 64 a handle made on another
engine or prefix, 76 already gone with --strict.`,
		Args: noArgs("release"),
	})
}

// releaseJSON is what release prints with -o json.
type releaseJSON struct {
	Key      string `json:"key"`
	Token    uint64 `json:"token"`
	Released bool   `json:"released"`
}

func (o *releaseOptions) run(ctx context.Context, _ []string) error {
	h, err := o.handle()
	if err != nil {
		return err
	}
	err = o.release(ctx, h)
	gone := errors.Is(err, lock.ErrNotHeld)
	if err != nil && !gone {
		return err
	}
	if gone && o.Strict {
		return staleHandle(h)
	}
	if o.Output == "json" {
		if err := writeJSON(o.g.stdout, releaseJSON{Key: h.Key, Token: h.Token, Released: !gone}); err != nil {
			return err
		}
	}
	if gone {
		fmt.Fprintf(o.g.stderr, "distlock: %s (token %d) was no longer held by this handle (it expired, was broken, taken over or released before); nothing to release\n", printable(h.Key), h.Token)
		return nil
	}
	fmt.Fprintf(o.g.stderr, "distlock: released %s (token %d)\n", printable(h.Key), h.Token)
	return nil
}

// release takes up the handle's lease and releases it: an error wrapping
// lock.ErrNotHeld when the handle no longer holds its lock.
func (o *releaseOptions) release(ctx context.Context, h lock.Handle) error {
	b, l, err := o.g.resume(ctx, h, "release")
	if err != nil {
		return err
	}
	defer b.Close()
	rctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	return holdError(l.Release(rctx))
}
