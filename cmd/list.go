package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
)

// listOptions are status's: -o text|json, and no flags of their own.
type listOptions statusOptions

func newListCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &listOptions{}, &cobra.Command{
		Use:   "list [PREFIX] [-o json|text]",
		Short: "List every held lock whose key starts with PREFIX",
		Long: `List every lock held right now whose key starts with PREFIX (all keys when
PREFIX is empty), sorted by key, as an aligned table: key, fencing token,
holder (user@host and the pid of the holding distlock), note, how long it has
been held and when its lease expires.

A semaphore (run --limit N) has one row per held slot, and a SLOT column
says which slot and how many of the N are held: "0 (2/3)".

How each engine finds them:
` + engineTable(func(e backend.Engine) string { return e.Lists }) + `

With -o json the output is an array with one object per key, shaped like
those of status -o json (an empty array when nothing is held); hold says
whether a holder is a lock kept with no process renewing it: "min-hold",
"handle" or "" (a running distlock renews it).

Exit status: 0 (also when nothing is held), 64 usage, 69 engine
unreachable, 77 credentials refused.`,
		Example: `  distlock list
  distlock list job: -o json | jq -r '.[] | "\(.key) \(.host)"'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return errors.New("list takes at most one PREFIX")
			}
			return nil
		},
		ValidArgsFunction: completeKeys(g, 1),
	})
}

func (o *listOptions) run(ctx context.Context, args []string) error {
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	if len(prefix) > lock.MaxKeyLen {
		return lock.Invalidf("prefix is %d bytes long; keys are at most %d", len(prefix), lock.MaxKeyLen)
	}
	return o.g.withEngine(ctx, func(b lock.Backend) error { return o.list(ctx, b, prefix) })
}

// list prints the locks held on b under prefix.
func (o *listOptions) list(ctx context.Context, b lock.Backend, prefix string) error {
	hs, err := o.g.list(ctx, b, prefix)
	if err != nil {
		return err
	}
	sts := make([]keyStatus, len(hs))
	for i, h := range hs {
		all, err := o.g.holdersOf(ctx, b, h.Key, h)
		if err != nil {
			return err
		}
		sts[i] = keyStatus{key: h.Key, h: h, all: all, held: true}
	}
	if o.Output == "json" {
		out := make([]statusJSON, len(sts))
		for i, st := range sts {
			out[i] = toStatusJSON(st, o.g.describeBackend(), b.Guarantee())
		}
		return writeJSON(o.g.stdout, out)
	}
	if len(hs) == 0 {
		if prefix == "" {
			fmt.Fprintln(o.g.stdout, "no locks held")
		} else {
			fmt.Fprintf(o.g.stdout, "no locks held under %q\n", prefix)
		}
		return nil
	}
	return printTable(o.g.stdout, o.g.palette(), sts, time.Now())
}
