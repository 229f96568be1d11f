package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
)

type listOptions struct {
	g      *globalOptions
	Output string
}

func newListCommand(g *globalOptions) *cobra.Command {
	o := &listOptions{g: g}
	c := &cobra.Command{
		Use:   "list [PREFIX] [-o json|text]",
		Short: "List every held lock whose key starts with PREFIX",
		Long: `List every lock held right now whose key starts with PREFIX (all keys when
PREFIX is empty), sorted by key, as an aligned table: key, fencing token,
holder (user@host and the pid of the holding distlock), note, how long it has
been held and when its lease expires.

On Redis the keys are found with SCAN (never KEYS, which would block the
server), on etcd with one range read, on the file engine by reading the lock
directory (a lock whose holder died is not listed).

With -o json the output is an array of objects shaped like those of
status -o json (an empty array when nothing is held).

Exit status: 0 (also when nothing is held), 64 usage, 69 engine unreachable.`,
		Example: `  distlock list
  distlock list job: -o json | jq -r '.[] | "\(.key) \(.host)"'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return errors.New("list takes at most one PREFIX")
			}
			return nil
		},
		ValidArgsFunction: g.completeKeys(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			return o.run(cmd.Context(), prefix)
		},
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	return c
}

func (o *listOptions) run(ctx context.Context, prefix string) error {
	if err := checkOutput(o.Output); err != nil {
		return err
	}
	if len(prefix) > lock.MaxKeyLen {
		return lock.Invalidf("prefix is %d bytes long; keys are at most %d", len(prefix), lock.MaxKeyLen)
	}
	b, err := o.g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	hs, err := o.g.list(ctx, b, prefix)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		out := make([]statusJSON, len(hs))
		for i, h := range hs {
			out[i] = toStatusJSON(h.Key, h, true, o.g.describeBackend(), b.Guarantee())
		}
		return writeJSON(o.g.stdout, out, false)
	}
	if len(hs) == 0 {
		if prefix == "" {
			fmt.Fprintln(o.g.stdout, "no locks held")
		} else {
			fmt.Fprintf(o.g.stdout, "no locks held under %q\n", prefix)
		}
		return nil
	}
	printTable(o.g.stdout, o.g.palette(), hs, time.Now())
	return nil
}

// holderText is the HOLDER column: user@host pid N, and the kind of hold
// when no process renews the lease (min-hold, handle).
func holderText(h lock.Holder) string {
	s := h.Meta.Host
	if s == "" {
		s = "unknown host"
	}
	if h.Meta.User != "" {
		s = h.Meta.User + "@" + s
	}
	if h.Meta.PID > 0 {
		s += " pid " + strconv.Itoa(h.Meta.PID)
	}
	if h.Hold != "" {
		s += " (" + h.Hold + ")" // no process renews it; it runs out by itself
	}
	return s
}

// printTable prints held locks as columns aligned on their plain text;
// colour is added around the padded cells, so escapes never skew widths.
func printTable(w io.Writer, pal palette, hs []lock.Holder, now time.Time) {
	header := []string{"KEY", "TOKEN", "HOLDER", "NOTE", "HELD FOR", "EXPIRES IN"}
	rows := make([][]string, len(hs))
	for i, h := range hs {
		rows[i] = []string{
			printable(h.Key),
			strconv.FormatUint(h.Token, 10),
			printable(holderText(h)),
			orDash(printable(h.Meta.Note)),
			heldForText(h, now),
			expiresText(h),
		}
	}
	width := make([]int, len(header))
	for c, s := range header {
		width[c] = utf8.RuneCountInString(s)
	}
	for _, r := range rows {
		for c, s := range r {
			width[c] = max(width[c], utf8.RuneCountInString(s))
		}
	}
	line := func(cells []string, paint func(c int, s string) string) {
		var b strings.Builder
		for c, s := range cells {
			if c == len(cells)-1 {
				b.WriteString(paint(c, s))
				break
			}
			b.WriteString(paint(c, s+strings.Repeat(" ", width[c]-utf8.RuneCountInString(s))))
			b.WriteString("  ")
		}
		fmt.Fprintln(w, b.String())
	}
	line(header, func(_ int, s string) string { return pal.header.Sprint(s) })
	for i, r := range rows {
		h := hs[i]
		line(r, func(c int, s string) string {
			switch {
			case c == 0:
				return pal.held.Sprint(s)
			case c == len(r)-1 && expiring(h):
				return pal.expiring.Sprint(s)
			}
			return s
		})
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// completeKeys completes KEY arguments from the locks held now. It is
// bounded by --connect-timeout, and never prints an error into the user's
// shell: whatever goes wrong, it offers no keys (and no file names).
// maxArgs < 0 means any number of keys (already given keys are skipped).
func (g *globalOptions) completeKeys(maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if maxArgs >= 0 && len(args) >= maxArgs {
			return nil, none
		}
		if g.validate() != nil {
			return nil, none
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), g.ConnectTimeout)
		defer cancel()
		type result struct {
			hs []lock.Holder
			ok bool
		}
		done := make(chan result, 1)
		go func() { // a stuck engine call must not outlast the timeout
			b, err := g.open(ctx)
			if err != nil {
				done <- result{}
				return
			}
			defer b.Close()
			hs, err := g.list(ctx, b, toComplete)
			done <- result{hs, err == nil}
		}()
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
		}
		if !r.ok {
			return nil, none
		}
		given := map[string]bool{}
		for _, a := range args {
			given[a] = true
		}
		now := time.Now()
		var out []cobra.Completion
		for _, h := range r.hs {
			if !given[h.Key] {
				out = append(out, cobra.CompletionWithDesc(h.Key, printable(lock.DescribeHolder(h, now))))
			}
		}
		return out, none
	}
}
