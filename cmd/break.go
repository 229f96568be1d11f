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
	"github.com/spf13/pflag"

	"github.com/distlock/distlock/internal/lock"
)

type breakOptions struct {
	common
	Token uint64
	Yes   bool
	token *pflag.Flag // --token, to tell whether it was given: 0 names no holder
}

func (o *breakOptions) flags(c *cobra.Command) {
	c.Flags().Uint64Var(&o.Token, "token", 0, "break only the holder with fencing token N (on a semaphore: that slot)")
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin is not a terminal)")
	o.token = c.Flags().Lookup("token")
}

// tokenGiven reports whether --token was given: then break is a
// compare-and-delete of that token only, even --token 0 (which no holder
// has: status -o json says 0 for a free key).
func (o *breakOptions) tokenGiven() bool { return o.token != nil && o.token.Changed }

func newBreakCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &breakOptions{}, &cobra.Command{
		Use:   "break KEY [--token N] [--yes] [-o json|text]",
		Short: "Remove a stuck lock; its holder stops its command",
		Long: `Remove the lock on KEY whoever holds it. Waiters are woken and the next one
takes the lock. The broken holder finds out at its next renewal (within
ttl/3; at once on the file engine on the same machine) and stops its command
(SIGTERM, SIGKILL 100ms later; it exits 76).

With --token N only the holder with fencing token N is broken (a
compare-and-delete), so a runbook can never break the next holder by mistake.
No holder has token 0 (status -o json says 0 for a free key): --token 0
breaks nothing, exiting 3 when the key is free and 75 when it is held.
On a semaphore (run --limit N) --token picks the slot; without it every
holder is broken, and each is named.

On a terminal break shows the holders and asks first; the holders shown are
the only ones it breaks: if they let go meanwhile and another took the key,
the new holder is left alone (75). Without a terminal --yes is required.

With -o json: one object, key, broken (the holders broken, shaped like
status -o json's holders), backend and guarantee. Errors stay one line on
stderr.

Exit status: 0 broken, 1 not confirmed, 3 not held, 64 usage,
69 engine unreachable, 75 held under a token other than --token (or by a
holder other than those shown), 77 credentials refused.`,
		Example: `  distlock break job:daily
  distlock break job:daily --token 1745312345678901 --yes
  distlock break pool --yes -o json | jq '.broken[].slot'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("break takes exactly one KEY")
			}
			return nil
		},
		ValidArgsFunction: completeKeys(g, 1),
	})
}

func (o *breakOptions) run(ctx context.Context, args []string) error {
	key := args[0]
	if err := lock.ValidateKeyArg(key, "break"); err != nil {
		return err
	}
	if !o.Yes && !isTerminal(o.g.stdin) {
		return usageError(fmt.Errorf("refusing to break %s without --yes: stdin is not a terminal", key))
	}
	return o.g.withEngine(ctx, func(b lock.Backend) error { return o.breakKey(ctx, b, key) })
}

// breakKey breaks key's holders on b: those shown, the one --token names,
// or every one.
func (o *breakOptions) breakKey(ctx context.Context, b lock.Backend, key string) error {
	st, err := o.g.keyStatus(ctx, b, key)
	if err != nil {
		return err
	}
	if !st.held {
		return notHeld(key)
	}
	if o.tokenGiven() && o.Token == 0 {
		// Token 0 names no holder; Break(key, 0) would break any.
		return otherToken(key, st.h.Token, 0)
	}
	// An engine that lists every slot (lock.SlotInspector) shows which
	// holder --token names; others leave it to their compare-and-delete.
	_, complete := b.(lock.SlotInspector)
	targets := st.all
	if o.tokenGiven() && (complete || !o.Yes) {
		targets = withToken(st.all, o.Token)
		if len(targets) == 0 {
			return otherToken(key, st.h.Token, o.Token)
		}
	}
	if !o.Yes {
		if !confirm(o.g.stdin, o.g.stderr, key, targets, time.Now()) {
			return declined(key)
		}
		// Break only the holders shown, not any that came since.
		return o.breakEach(ctx, b, key, targets)
	}
	if !o.tokenGiven() && len(targets) > 1 {
		return o.breakEach(ctx, b, key, targets)
	}
	// A fresh deadline: the inspection may have taken its time.
	bctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	h, err := b.Break(bctx, key, o.Token)
	if err := o.breakError(key, err); err != nil {
		return err
	}
	if len(targets) == 1 && (h.Token == 0 || h.Token == targets[0].Token) {
		h = targets[0] // the one seen, with its slot; or no holder described
	}
	return o.report(b, key, []lock.Holder{h})
}

// breakEach breaks each of hs by its token (compare-and-delete): holders
// gone meanwhile are skipped, and only those broken are reported.
func (o *breakOptions) breakEach(ctx context.Context, b lock.Backend, key string, hs []lock.Holder) error {
	var broken []lock.Holder
	for _, h := range hs {
		bctx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
		_, err := b.Break(bctx, key, h.Token)
		cancel()
		var busy *lock.BusyError
		switch {
		case errors.Is(err, lock.ErrNotHeld), errors.As(err, &busy):
			continue // let go, or broken by someone else, since shown
		case err != nil:
			return o.g.engineError(err)
		}
		broken = append(broken, h)
	}
	if len(broken) == 0 {
		return o.nothingBroken(ctx, b, key)
	}
	return o.report(b, key, broken)
}

// nothingBroken says why breakEach broke no one: the holders shown are
// gone and a new one holds the key (75, left alone), or no one does (3;
// also when the only holders left are broken ones that have not let go
// yet, on the file engine).
func (o *breakOptions) nothingBroken(ctx context.Context, b lock.Backend, key string) error {
	st, err := o.g.keyStatus(ctx, b, key)
	if err != nil {
		return err
	}
	for _, h := range st.all {
		if knownHolder(h) {
			return changedHands(key, h, time.Now())
		}
	}
	return notHeld(key)
}

// breakError maps Break's error to what break says; nil on success.
func (o *breakOptions) breakError(key string, err error) error {
	var busy *lock.BusyError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lock.ErrNotHeld):
		return notHeld(key)
	case errors.As(err, &busy):
		return otherToken(key, busy.Holder.Token, o.Token)
	}
	return o.g.engineError(err)
}

// breakJSON is the documented JSON shape of break -o json.
type breakJSON struct {
	Key       string       `json:"key"`
	Broken    []holderJSON `json:"broken"`
	Backend   string       `json:"backend"`
	Guarantee string       `json:"guarantee"`
}

// report says which holders were broken: one line each.
func (o *breakOptions) report(b lock.Backend, key string, hs []lock.Holder) error {
	if o.Output == "json" {
		return writeJSON(o.g.stdout, breakJSON{Key: key, Broken: toHoldersJSON(hs), Backend: o.g.describeBackend(), Guarantee: b.Guarantee()})
	}
	now := time.Now()
	for _, h := range hs {
		switch {
		case !knownHolder(h):
			fmt.Fprintf(o.g.stdout, "%s was already broken; its holder has not let go yet (a stopped or hung process on the file engine keeps the lock until it ends)\n", printable(key))
		case h.Limit > 1:
			fmt.Fprintf(o.g.stdout, "broke %s slot %d (was %s)\n", printable(key), h.Slot, printable(lock.DescribeHolder(h, now)))
		default:
			fmt.Fprintf(o.g.stdout, "broke %s (was %s)\n", printable(key), printable(lock.DescribeHolder(h, now)))
		}
	}
	return nil
}

// withToken is the holder among hs with token, if any.
func withToken(hs []lock.Holder, token uint64) []lock.Holder {
	for _, h := range hs {
		if h.Token == token {
			return []lock.Holder{h}
		}
	}
	return nil
}

// knownHolder is false for a lock held with no record of its holder: on the
// file engine, one broken already whose process has not let go yet.
func knownHolder(h lock.Holder) bool {
	return h.Token != 0 || h.Owner != "" || h.Meta.Host != ""
}

// confirm shows the holders on out and asks whether to break them; only
// "y" or "yes" (any case) on in is a yes. End of input is a no.
func confirm(in io.Reader, out io.Writer, key string, hs []lock.Holder, now time.Time) bool {
	if semaphore(hs) {
		fmt.Fprintf(out, "%s is a semaphore with %s; to break:\n", printable(key), heldText(hs))
		for _, h := range hs {
			fmt.Fprintf(out, "  slot %d: %s\n", h.Slot, printable(lock.DescribeHolder(h, now)))
			printHolderDetails(out, h, "    ")
		}
	} else {
		fmt.Fprintf(out, "%s is %s\n", printable(key), printable(lock.DescribeHolder(hs[0], now)))
		printHolderDetails(out, hs[0], "  ")
	}
	if len(hs) > 1 {
		fmt.Fprintf(out, "Break them? Their commands will be stopped. [y/N] ")
	} else {
		fmt.Fprintf(out, "Break it? Its command will be stopped. [y/N] ")
	}
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(out)
	}
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
