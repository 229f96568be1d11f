package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
		Long: `Remove the lock on KEY whoever holds it. Waiters are woken and the next one
takes the lock. The broken holder finds out at its next renewal (within
ttl/3; at once on the file engine on the same machine) and stops its command
(SIGTERM, SIGKILL 100ms later; it exits 76).

With --token N only the holder with fencing token N is broken (a
compare-and-delete), so a runbook can never break the next holder by mistake.

On a terminal break shows the holder and asks first; the holder shown is the
only one it breaks. Without a terminal --yes is required.

Exit status: 0 broken, 1 not confirmed, 3 not held, 64 usage,
69 engine unreachable, 75 held under a token other than --token.`,
		Example: `  distlock break job:daily
  distlock break job:daily --token 1745312345678901 --yes`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("break takes exactly one KEY")
			}
			return nil
		},
		ValidArgsFunction: completeKeys(g, 1),
		RunE:              func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	c.Flags().Uint64Var(&o.Token, "token", 0, "break only if the current fencing token is N")
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin is not a terminal)")
	return c
}

func (o *breakOptions) run(ctx context.Context, key string) error {
	if err := lock.ValidateKey(key); err != nil {
		return err
	}
	if !o.Yes && !isTerminal(o.g.stdin) {
		return usageError(fmt.Errorf("refusing to break %s without --yes: stdin is not a terminal", key))
	}
	b, err := o.g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if !o.Yes {
		ictx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
		h, held, err := b.Inspect(ictx, key)
		cancel()
		if err != nil {
			return o.g.engineError(err)
		}
		if !held {
			return notHeld(key)
		}
		if o.Token != 0 && h.Token != o.Token {
			return otherToken(key, h.Token, o.Token)
		}
		if !confirm(o.g.stdin, o.g.stderr, key, h, time.Now()) {
			return declined(key)
		}
		// Break only the holder that was shown, not one that came since.
		o.Token = h.Token
	}
	// A fresh deadline: the question may have waited a long time for an answer.
	bctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	h, err := b.Break(bctx, key, o.Token)
	var busy *lock.BusyError
	switch {
	case errors.Is(err, lock.ErrNotHeld):
		return notHeld(key)
	case errors.As(err, &busy):
		return otherToken(key, busy.Holder.Token, o.Token)
	case err != nil:
		return o.g.engineError(err)
	}
	if !knownHolder(h) {
		fmt.Fprintf(o.g.stdout, "%s was already broken; its holder has not let go yet (a stopped or hung process on the file engine keeps the lock until it ends)\n", printable(key))
		return nil
	}
	fmt.Fprintf(o.g.stdout, "broke %s (was %s)\n", printable(key), printable(lock.DescribeHolder(h, time.Now())))
	return nil
}

// knownHolder is false for a lock held with no record of its holder: on the
// file engine, one broken already whose process has not let go yet.
func knownHolder(h lock.Holder) bool {
	return h.Token != 0 || h.Owner != "" || h.Meta.Host != ""
}

// confirm shows the holder on out and asks whether to break it; only
// "y" or "yes" (any case) on in is a yes. End of input is a no.
func confirm(in io.Reader, out io.Writer, key string, h lock.Holder, now time.Time) bool {
	fmt.Fprintf(out, "%s is %s\n", printable(key), printable(lock.DescribeHolder(h, now)))
	printHolderDetails(out, h)
	fmt.Fprintf(out, "Break it? Its command will be stopped. [y/N] ")
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(out)
	}
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
