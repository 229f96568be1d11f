package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
)

type statusOptions struct {
	common
}

func newStatusCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &statusOptions{}, &cobra.Command{
		Use:   "status KEY... [-o json|text]",
		Short: "Show who holds each KEY, since when and until when",
		Long: `Show for each KEY whether it is held and by whom: host, pid of the holding
distlock, user, command, note, fencing token, when it was acquired, how long
it has been held and when the lease expires, and what the engine guarantees.

A semaphore (run --limit N) shows how many of its slots are held ("2/3
held") and every holder: its slot, token, holder, age and time left.

With -o json: an array with one object per KEY, in the order named (also
for a single KEY):
  key, held, token, holder_id, host, pid, user, command, note,
  acquired_at (RFC 3339, null when free), ttl_ms,
  expires_in_ms (null when free or unknown), hold, backend (password redacted),
  guarantee, limit (1 a mutex, N a semaphore, 0 free), holders.
The holder fields describe the oldest holder; holders lists every one
(one for a mutex, each held slot of a semaphore) with slot, token,
holder_id, host, pid, user, command, note, acquired_at, ttl_ms,
expires_in_ms and hold.
hold is "min-hold" (kept by run --min-hold after its command ended) or
"handle" (taken by distlock acquire) for a lock kept with no process
renewing it, shown as (min-hold) and (handle) in the text output; "" when
a running distlock renews it.
holder_id is a public id derived one-way from the holder's secret owner id
(DISTLOCK_OWNER), which is never shown.
waiting is how many contenders stand in the key's line, on an engine that
keeps one (null on the others, and when it cannot be read; a waiter that
died keeps its place until its lease runs out); the text output shows it as
a "waiting:" line when anyone waits.
last_run and last_success are the key's last run (not one running now)
and last successful run from its run ledger (distlock history), null when
it has none; the text output shows them as "last run:" and "last success:"
lines.

Exit status (like systemctl is-active): 0 every KEY is held, 3 at least one
is free, 64 usage, 69 engine unreachable, 77 credentials refused.`,
		Example: `  distlock status job:daily
  distlock status job:daily job:hourly -o json | jq '.[] | select(.held) | .host'
  distlock status deploy && echo "a deploy is running"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("status needs at least one KEY")
			}
			return nil
		},
		ValidArgsFunction: completeKeys(g, -1),
	})
}

// statusJSON is the documented JSON shape of one key's status (also one
// element of `list -o json`). Every field is always present, so that
// scripts can rely on the shape: a free key has held=false, zero values,
// nulls and no holders. The holder fields describe the key's oldest holder;
// holders lists every one (each slot of a semaphore).
type statusJSON struct {
	Key  string `json:"key"`
	Held bool   `json:"held"`
	holderFields
	Backend   string       `json:"backend"`
	Guarantee string       `json:"guarantee"`
	Limit     int          `json:"limit"` // 1 a mutex, N a semaphore (--limit N), 0 free
	Holders   []holderJSON `json:"holders"`
}

func toStatusJSON(st keyStatus, backendDesc, guarantee string) statusJSON {
	s := statusJSON{Key: st.key, Held: st.held, Backend: backendDesc, Guarantee: guarantee, Holders: []holderJSON{}}
	if !st.held {
		return s
	}
	s.holderFields = toHolderFields(st.h)
	s.Limit = max(1, st.h.Limit)
	s.Holders = toHoldersJSON(st.all)
	return s
}

// keyStatus is what the engine said about one key: the holder it is
// described by, and every holder (each slot of a semaphore).
type keyStatus struct {
	key  string
	h    lock.Holder
	all  []lock.Holder
	held bool
}

func (o *statusOptions) run(ctx context.Context, keys []string) error {
	for _, key := range keys {
		if err := lock.ValidateKeyArg(key, "status"); err != nil {
			return err
		}
	}
	return o.g.withEngine(ctx, func(b lock.Backend) error { return o.show(ctx, b, keys) })
}

// show prints each of keys' status on b, its waiters and its last runs.
func (o *statusOptions) show(ctx context.Context, b lock.Backend, keys []string) error {
	sts := make([]keyStatus, 0, len(keys))
	runs := make([]ledger.History, 0, len(keys))
	waiting := make([]*int64, 0, len(keys))
	allHeld := true
	for _, key := range keys {
		st, err := o.g.keyStatus(ctx, b, key)
		if err != nil {
			return err
		}
		// The lock is what status is for: a run ledger that cannot be
		// read costs the last-run lines, with a warning, not the answer.
		h, err := o.g.history(ctx, b, key)
		if err != nil {
			o.g.logger().Warn("cannot read the run ledger; the last run and last success are not shown", "key", key, "error", err)
		}
		sts, runs = append(sts, st), append(runs, h)
		waiting = append(waiting, o.g.waitingOf(ctx, b, key))
		allHeld = allHeld && st.held
	}
	if o.Output == "json" {
		out := make([]keyStatusJSON, len(sts))
		for i, st := range sts {
			out[i] = keyStatusJSON{toStatusJSON(st, o.g.describeBackend(), b.Guarantee()), waitingJSON{waiting[i]}, lastRuns(runs[i])}
		}
		if err := writeJSON(o.g.stdout, out); err != nil {
			return err
		}
	} else {
		pal := o.g.palette()
		now := time.Now()
		for i, st := range sts {
			printStatusText(o.g.stdout, pal, st, now)
			printWaiting(o.g.stdout, waiting[i])
			printLastRuns(o.g.stdout, runs[i])
		}
		fmt.Fprintf(o.g.stdout, "engine: %s\nbackend: %s\n", b.Guarantee(), o.g.describeBackend())
	}
	if !allHeld {
		return withCode(exitFree)
	}
	return nil
}

// keyStatus asks the engine about key, each request bounded by
// --connect-timeout.
func (g *globalOptions) keyStatus(ctx context.Context, b lock.Backend, key string) (keyStatus, error) {
	ictx, cancel := context.WithTimeout(ctx, g.ConnectTimeout)
	h, held, err := b.Inspect(ictx, key)
	cancel()
	if err != nil {
		return keyStatus{}, g.engineError(err)
	}
	st := keyStatus{key: key, h: h, held: held}
	if held {
		if st.all, err = g.holdersOf(ctx, b, key, h); err != nil {
			return keyStatus{}, err
		}
	}
	return st, nil
}

// printStatusText prints one key: a summary line, then the holder's
// details; a semaphore says how many of its slots are held, then each.
//
//	job:daily: held by host-b pid 4123 (token 17) for 2m13s, expires in 28s
//	  holder id: 942bc218274f
//	  user:      deploy
//	  command:   ./job.sh
//	  note:      release 1.4
//	  acquired:  2025-05-01T03:04:05Z
//	  ttl:       30s
//	pool: 2/3 held
//	  slot 0: held by host-b pid 4123 (token 17) for 2m13s, expires in 28s
//	    holder id: 942bc218274f
//	  slot 1: held by ...
func printStatusText(w io.Writer, pal palette, st keyStatus, now time.Time) {
	key, h := printable(st.key), st.h
	if !st.held {
		fmt.Fprintf(w, "%s: %s\n", key, pal.free.Sprint("free"))
		return
	}
	if semaphore(st.all) {
		fmt.Fprintf(w, "%s: %s\n", key, pal.held.Sprint(heldText(st.all)))
		for _, h := range st.all {
			fmt.Fprintf(w, "  slot %d: %s\n", h.Slot, holderSummary(pal, h, now))
			printHolderDetails(w, h, "    ")
		}
		return
	}
	fmt.Fprintf(w, "%s: %s\n", key, holderSummary(pal, h, now))
	if knownHolder(h) {
		printHolderDetails(w, h, "  ")
	}
}

// holderSummary is "held by host-b pid 4123 (token 17) for 2m13s, expires
// in 28s", coloured by how soon it expires.
func holderSummary(pal palette, h lock.Holder, now time.Time) string {
	if !knownHolder(h) {
		return pal.expiring.Sprint("held, but its holder left no record (broken already; the holding process has not let go yet)")
	}
	state := pal.held
	if expiring(h) {
		state = pal.expiring
	}
	return state.Sprint(printable(lock.DescribeHolder(h, now)))
}

// printHolderDetails prints the aligned "name: value" lines under a
// holder, each after indent.
func printHolderDetails(w io.Writer, h lock.Holder, indent string) {
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%s%-10s %s\n", indent, name+":", printable(value))
		}
	}
	field("holder id", h.ID())
	field("user", h.Meta.User)
	field("command", h.Meta.Command)
	field("note", h.Meta.Note)
	if !h.AcquiredAt.IsZero() {
		field("acquired", h.AcquiredAt.UTC().Format(time.RFC3339))
	}
	if h.TTL > 0 {
		field("ttl", h.TTL.String())
	}
	switch h.Hold {
	case "":
	case lock.HoldMinHold:
		field("hold", "min-hold: the command has ended; the lock is kept until it expires")
	case lock.HoldHandle:
		field("hold", "handle: held across steps (distlock acquire); released by distlock release or when it expires")
	default:
		field("hold", h.Hold+": no process renews it; it is kept until it expires")
	}
}
