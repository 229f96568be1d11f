package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
)

type statusOptions struct {
	g      *globalOptions
	Output string
}

func newStatusCommand(g *globalOptions) *cobra.Command {
	o := &statusOptions{g: g}
	c := &cobra.Command{
		Use:   "status KEY... [-o json|text]",
		Short: "Show who holds each KEY, since when and until when",
		Long: `Show for each KEY whether it is held and by whom: host, pid of the holding
distlock, user, command, note, fencing token, when it was acquired, how long
it has been held and when the lease expires, and what the engine guarantees.

With -o json a single KEY gives one object, several KEYs an array of them:
  key, held, token, holder_id, host, pid, user, command, note,
  acquired_at (RFC 3339, null when free), ttl_ms,
  expires_in_ms (null when free or unknown), backend (password redacted),
  guarantee.
holder_id is a public id derived one-way from the holder's secret owner id
(DISTLOCK_OWNER), which is never shown.

Exit status (like systemctl is-active): 0 every KEY is held, 3 at least one
is free, 64 usage, 69 engine unreachable.`,
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
		RunE:              func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args) },
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	return c
}

// statusJSON is the documented JSON shape of one key's status (also one
// row of `list -o json`). Every field is always present, so that scripts
// can rely on the shape: a free key has held=false, zero values and nulls.
type statusJSON struct {
	Key         string     `json:"key"`
	Held        bool       `json:"held"`
	Token       uint64     `json:"token"`
	HolderID    string     `json:"holder_id"` // never the owner id: that is the holder's secret
	Host        string     `json:"host"`
	PID         int        `json:"pid"`
	User        string     `json:"user"`
	Command     string     `json:"command"`
	Note        string     `json:"note"`
	AcquiredAt  *time.Time `json:"acquired_at"`
	TTLms       int64      `json:"ttl_ms"`
	ExpiresInMs *int64     `json:"expires_in_ms"`
	Backend     string     `json:"backend"`
	Guarantee   string     `json:"guarantee"`
}

func toStatusJSON(key string, h lock.Holder, held bool, backendDesc, guarantee string) statusJSON {
	s := statusJSON{Key: key, Held: held, Backend: backendDesc, Guarantee: guarantee}
	if !held {
		return s
	}
	s.Token, s.HolderID = h.Token, h.ID()
	s.Host, s.PID, s.User, s.Command, s.Note = h.Meta.Host, h.Meta.PID, h.Meta.User, h.Meta.Command, h.Meta.Note
	if !h.AcquiredAt.IsZero() {
		at := h.AcquiredAt.UTC().Truncate(time.Millisecond)
		s.AcquiredAt = &at
	}
	s.TTLms = h.TTL.Milliseconds()
	if h.ExpiresIn >= 0 {
		ms := h.ExpiresIn.Milliseconds()
		s.ExpiresInMs = &ms
	}
	return s
}

// keyStatus is what the engine said about one key.
type keyStatus struct {
	key  string
	h    lock.Holder
	held bool
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return lock.Invalidf("--output must be text or json, got %q", o)
	}
	return nil
}

func (o *statusOptions) run(ctx context.Context, keys []string) error {
	if err := checkOutput(o.Output); err != nil {
		return err
	}
	for _, key := range keys {
		if err := lock.ValidateKey(key); err != nil {
			return err
		}
	}
	b, err := o.g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	sts := make([]keyStatus, 0, len(keys))
	allHeld := true
	for _, key := range keys {
		ictx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
		h, held, err := b.Inspect(ictx, key)
		cancel()
		if err != nil {
			return o.g.engineError(err)
		}
		sts = append(sts, keyStatus{key: key, h: h, held: held})
		allHeld = allHeld && held
	}
	if o.Output == "json" {
		out := make([]statusJSON, len(sts))
		for i, st := range sts {
			out[i] = toStatusJSON(st.key, st.h, st.held, o.g.describeBackend(), b.Guarantee())
		}
		if err := writeJSON(o.g.stdout, out, len(keys) == 1); err != nil {
			return err
		}
	} else {
		pal := o.g.palette()
		now := time.Now()
		for _, st := range sts {
			printStatusText(o.g.stdout, pal, st.key, st.h, st.held, now)
		}
		fmt.Fprintf(o.g.stdout, "engine: %s\nbackend: %s\n", b.Guarantee(), o.g.describeBackend())
	}
	if !allHeld {
		return withCode(exitFree)
	}
	return nil
}

// writeJSON writes one compact JSON value and a newline: the first element
// alone when single is set, else the whole array.
func writeJSON(w io.Writer, v []statusJSON, single bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if single && len(v) == 1 {
		return enc.Encode(v[0])
	}
	return enc.Encode(v)
}

// printStatusText prints one key: a summary line, then the holder's details.
//
//	job:daily: held by host-b pid 4123 (token 17) for 2m13s, expires in 28s
//	  holder id: 942bc218274f
//	  user:      deploy
//	  command:   ./job.sh
//	  note:      release 1.4
//	  acquired:  2025-05-01T03:04:05Z
//	  ttl:       30s
func printStatusText(w io.Writer, pal palette, key string, h lock.Holder, held bool, now time.Time) {
	if !held {
		fmt.Fprintf(w, "%s: %s\n", printable(key), pal.free.Sprint("free"))
		return
	}
	if !knownHolder(h) {
		fmt.Fprintf(w, "%s: %s\n", printable(key), pal.expiring.Sprint("held, but its holder left no record (broken already; the holding process has not let go yet)"))
		return
	}
	state := pal.held
	if expiring(h) {
		state = pal.expiring
	}
	fmt.Fprintf(w, "%s: %s\n", printable(key), state.Sprint(printable(lock.DescribeHolder(h, now))))
	printHolderDetails(w, h)
}

// printHolderDetails prints the aligned "  name: value" lines under a holder.
func printHolderDetails(w io.Writer, h lock.Holder) {
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "  %-10s %s\n", name+":", printable(value))
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
