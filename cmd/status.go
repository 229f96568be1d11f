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
		Use:   "status KEY",
		Short: "Show who holds KEY, since when and until when",
		Long: `Show whether KEY is held and by whom: host, pid of the holding distlock,
user, command, note, fencing token, when it was acquired and when the lease
expires. Exit status: 0 held, 3 free, 69 engine unreachable.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(errors.New("status takes exactly one KEY"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	return c
}

// statusJSON is the documented JSON shape of one key's status.
type statusJSON struct {
	Key         string     `json:"key"`
	Held        bool       `json:"held"`
	Token       uint64     `json:"token,omitempty"`
	Owner       string     `json:"owner,omitempty"`
	Host        string     `json:"host,omitempty"`
	PID         int        `json:"pid,omitempty"`
	User        string     `json:"user,omitempty"`
	Command     string     `json:"command,omitempty"`
	Note        string     `json:"note,omitempty"`
	AcquiredAt  *time.Time `json:"acquired_at,omitempty"`
	TTLms       int64      `json:"ttl_ms,omitempty"`
	ExpiresInMs *int64     `json:"expires_in_ms,omitempty"`
	Backend     string     `json:"backend"`
	Guarantee   string     `json:"guarantee"`
}

func toStatusJSON(key string, h lock.Holder, held bool, backendDesc, guarantee string) statusJSON {
	s := statusJSON{Key: key, Held: held, Backend: backendDesc, Guarantee: guarantee}
	if !held {
		return s
	}
	s.Token, s.Owner = h.Token, h.Owner
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

func (o *statusOptions) run(ctx context.Context, key string) error {
	if o.Output != "text" && o.Output != "json" {
		return lock.Invalidf("--output must be text or json, got %q", o.Output)
	}
	if err := lock.ValidateKey(key); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := o.g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	ictx, cancel := context.WithTimeout(ctx, o.g.ConnectTimeout)
	defer cancel()
	h, held, err := b.Inspect(ictx, key)
	if err != nil {
		return err
	}
	s := toStatusJSON(key, h, held, o.g.describeBackend(), b.Guarantee())
	if o.Output == "json" {
		enc := json.NewEncoder(o.g.stdout)
		if err := enc.Encode(s); err != nil {
			return err
		}
	} else {
		printStatusText(o.g.stdout, key, h, held, b.Guarantee())
	}
	if !held {
		return withCode(exitFree)
	}
	return nil
}

func printStatusText(w io.Writer, key string, h lock.Holder, held bool, guarantee string) {
	if !held {
		fmt.Fprintf(w, "%s: free\n", key)
		return
	}
	now := time.Now()
	fmt.Fprintf(w, "%s: %s\n", key, lock.DescribeHolder(h, now))
	if h.Meta.User != "" || h.Meta.Command != "" {
		fmt.Fprintf(w, "  user %s, command %s\n", orDash(h.Meta.User), orDash(h.Meta.Command))
	}
	if h.Meta.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", h.Meta.Note)
	}
	if !h.AcquiredAt.IsZero() {
		fmt.Fprintf(w, "  acquired at %s, ttl %s\n", h.AcquiredAt.UTC().Format(time.RFC3339), h.TTL)
	}
	fmt.Fprintf(w, "  engine: %s\n", guarantee)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
