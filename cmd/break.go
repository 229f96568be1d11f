package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/distlock/distlock/internal/lock"
)

type breakOptions struct {
	g     *globalOptions
	Token uint64
	Yes   bool
}

func newBreakCommand(g *globalOptions) *cobra.Command {
	o := &breakOptions{g: g}
	c := &cobra.Command{
		Use:   "break KEY [--token N] [--yes]",
		Short: "Remove a stuck lock; its holder stops its command",
		Long: `Remove the lock on KEY whoever holds it. The holder finds out at its next
renewal (on the file engine at once) and stops its command (exit 76).
With --token N only the holder with that fencing token is broken, so a
runbook can never break the next holder by mistake. On a terminal break
asks first; elsewhere --yes is required.
Exit status: 0 broken, 3 not held, 75 held under another token.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(errors.New("break takes exactly one KEY"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	c.Flags().Uint64Var(&o.Token, "token", 0, "break only if the current fencing token is N")
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin is not a terminal)")
	return c
}

func (o *breakOptions) run(ctx context.Context, key string) error {
	if err := lock.ValidateKey(key); err != nil {
		return err
	}
	interactive := o.g.stdin != nil && term.IsTerminal(int(o.g.stdin.Fd()))
	if !o.Yes && !interactive {
		return usageError(fmt.Errorf("refusing to break %s without --yes: stdin is not a terminal", key))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := o.g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	bctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	if !o.Yes {
		h, held, err := b.Inspect(bctx, key)
		if err != nil {
			return err
		}
		if !held {
			return &statusError{code: exitFree, msg: key + " is not held; nothing to break"}
		}
		fmt.Fprintf(o.g.stderr, "%s is %s.\nBreak it? Its command will be stopped. [y/N] ", key, lock.DescribeHolder(h, time.Now()))
		answer, _ := bufio.NewReader(o.g.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return &statusError{code: exitUsage, msg: "not broken"}
		}
		if o.Token == 0 {
			// Break only the holder that was shown, not one that came since.
			o.Token = h.Token
		}
	}
	h, err := b.Break(bctx, key, o.Token)
	var busy *lock.BusyError
	switch {
	case errors.Is(err, lock.ErrNotHeld):
		return &statusError{code: exitFree, msg: key + " is not held; nothing to break"}
	case errors.As(err, &busy):
		return &statusError{code: exitBusy, msg: fmt.Sprintf("%s is now held under token %d, not %d; left alone", key, busy.Holder.Token, o.Token)}
	case err != nil:
		return err
	}
	fmt.Fprintf(o.g.stdout, "broke %s (was %s)\n", key, lock.DescribeHolder(h, time.Now()))
	return nil
}
