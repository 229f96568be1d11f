package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
)

type historyOptions struct {
	common
	Last int
}

func (o *historyOptions) flags(c *cobra.Command) {
	c.Flags().IntVarP(&o.Last, "last", "n", 20, "show at most the last N runs (0: all kept)")
}

func newHistoryCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &historyOptions{}, &cobra.Command{
		Use:   "history KEY [-n N] [-o json|text]",
		Short: "Show the last runs of KEY across every replica, newest first",
		Long: `Show the last runs of KEY recorded in the engine by distlock run on every
machine, newest first: when each started and ended, how long it took, its
outcome, the command's exit code, its fencing token, host, pid and holder
id, and its slot (--once-per, --slot).

Outcomes: ok (exit 0), failed (exit non-zero, or the command could not be
started), killed (it died of a signal), lost (the lease was lost and the
command stopped), max_hold (stopped at --max-hold), skipped (its slot was
done already; the command was not run), running (it is running now), and
unknown (its distlock died before it could record the end: SIGKILL, a
crash, a power cut).

Each run is written when the lock is taken and again when the command
ends; a key keeps its last 100 runs (run --history N), and the last
successful run besides.

With -o json: an array of objects, newest first (empty: []):
  token, host, holder_id, pid, command, slot, started (RFC 3339),
  ended (null until the run ends), duration_ms (null likewise),
  exit_code (null when not known), outcome.

Exit status: 0 (also for a key never run), 64 usage, 69 engine
unreachable, 77 credentials refused.`,
		Example: `  distlock history job:daily
  distlock history job:daily -n 1 -o json | jq '.[0].outcome'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("history takes one KEY")
			}
			return nil
		},
		ValidArgsFunction: completeKeys(g, 1),
	})
}

// historyJSON is one run in history -o json.
type historyJSON struct {
	ledger.Entry
	DurationMS *int64 `json:"duration_ms"`
}

func (o *historyOptions) run(ctx context.Context, args []string) error {
	key := args[0]
	if err := lock.ValidateKeyArg(key, "history"); err != nil {
		return err
	}
	if o.Last < 0 {
		return lock.Invalidf("-n must not be negative, got %d", o.Last)
	}
	return o.g.withEngine(ctx, func(b lock.Backend) error { return o.show(ctx, b, key) })
}

// show prints key's last runs, as many as -n asks for.
func (o *historyOptions) show(ctx context.Context, b lock.Backend, key string) error {
	h, err := o.g.history(ctx, b, key)
	if err != nil {
		return err
	}
	runs := h.Runs
	if o.Last > 0 && len(runs) > o.Last {
		runs = runs[:o.Last]
	}
	if o.Output == "json" {
		return writeJSON(o.g.stdout, toHistoryJSON(runs))
	}
	if len(runs) == 0 {
		fmt.Fprintf(o.g.stdout, "no runs of %s recorded\n", printable(key))
		return nil
	}
	return printHistory(o.g.stdout, runs)
}

// history reads key's ledger and tells running runs from those whose
// distlock died (unknown) by the key's holders now. A key on an engine
// that keeps no ledger has none.
func (g *globalOptions) history(ctx context.Context, b lock.Backend, key string) (ledger.History, error) {
	store, ok := b.(lock.Ledger)
	if !ok {
		return ledger.History{}, nil
	}
	lctx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	h, err := ledger.Read(lctx, store, key)
	cancel()
	if err != nil {
		return ledger.History{}, g.engineError(err)
	}
	st, err := g.keyStatus(ctx, b, key)
	if err != nil {
		return ledger.History{}, err
	}
	return h.Resolve(st.all), nil
}

func toHistoryJSON(runs []ledger.Entry) []historyJSON {
	out := make([]historyJSON, len(runs))
	for i, e := range runs {
		out[i] = historyJSON{Entry: e}
		if e.Ended != nil {
			ms := e.Duration().Milliseconds()
			out[i].DurationMS = &ms
		}
	}
	return out
}

// printHistory prints runs as an aligned table.
func printHistory(w io.Writer, runs []ledger.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tDURATION\tOUTCOME\tEXIT\tTOKEN\tHOST\tPID\tHOLDER ID\tSLOT")
	for _, e := range runs {
		dur, code := "-", "-"
		if e.Ended != nil {
			dur = lock.RoundDuration(e.Duration())
		}
		if e.ExitCode != nil {
			code = strconv.Itoa(*e.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n",
			e.Started.UTC().Format(time.RFC3339), dur, printable(string(e.Outcome)), code, e.Token, printable(e.Host), e.PID, printable(e.Holder), printable(e.Slot))
	}
	return tw.Flush()
}
