package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/doctor"
	"github.com/distlock/distlock/internal/lock"
)

type doctorOptions struct {
	common
	Key string
	TTL time.Duration
}

func (o *doctorOptions) flags(c *cobra.Command) {
	c.Flags().StringVar(&o.Key, "key", "", "scratch key to take and release (default doctor:<host>)")
	c.Flags().DurationVar(&o.TTL, "ttl", 30*time.Second, "the --ttl you mean to run with (at least 1s); checks are judged against it")
}

func newDoctorCommand(g *globalOptions) *cobra.Command {
	return newCommand(g, &doctorOptions{}, &cobra.Command{
		Use:   "doctor [--key KEY] [--ttl D] [-o text|json]",
		Short: "Check that the engine is fit to hold locks: settings, latency, clock",
		Long: `Check the engine named by --backend (or DISTLOCK_BACKEND) and print one line
per check, ok, warning or problem, with what to change, then a summary.

Every engine: the median round trip against --ttl (which must exceed it
50 times over), and a scratch lock (doctor:<host> under --prefix, or --key)
taken and released twice, whose fencing token must rise. Then the engine's
own checks, including its clock against the 1% drift allowance:
` + engineTable(func(e backend.Engine) string { return e.Checks }) + `

With -o json: an array of objects with check, status (ok, warning or
problem), detail and fix.

Exit status: 0 nothing is a problem (warnings allowed), 1 a problem was
found, 64 usage, 69 engine unreachable, 77 credentials refused.`,
		Example: `  distlock --backend redis://redis:6379 doctor --ttl 30s
  distlock doctor -o json | jq '.[] | select(.status != "ok")'`,
		Args: noArgs("doctor"),
	})
}

func (o *doctorOptions) run(ctx context.Context, _ []string) error {
	if o.Key == "" {
		o.Key = "doctor:" + hostname()
	}
	if err := lock.ValidateKey(o.Key); err != nil {
		return err
	}
	if o.TTL < time.Second {
		return lock.Invalidf("--ttl must be at least 1s, got %s", o.TTL)
	}
	b, err := o.g.openEngine(ctx, true)
	if err != nil {
		return err
	}
	defer b.Close()
	checks := doctor.Run(ctx, b, doctor.Options{
		Key: o.Key, TTL: o.TTL, Timeout: o.g.ConnectTimeout,
		Meta: lock.Meta{Host: hostname(), PID: os.Getpid(), User: username(), Command: "distlock doctor"},
	})
	if o.Output == "json" {
		err = writeChecksJSON(o.g.stdout, checks)
	} else {
		err = writeChecksText(o.g.stdout, o.g.palette(), checks, b.Guarantee(), o.g.describeBackend())
	}
	if err != nil {
		return err
	}
	var problems []string
	for _, c := range checks {
		if c.Status == lock.CheckProblem {
			problems = append(problems, c.Name)
		}
	}
	return doctorProblems(problems)
}

// checkJSON is the documented JSON shape of one check.
type checkJSON struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func writeChecksJSON(w io.Writer, checks []lock.Check) error {
	out := make([]checkJSON, len(checks))
	for i, c := range checks {
		out[i] = checkJSON{Check: c.Name, Status: string(c.Status), Detail: c.Detail, Fix: c.Fix}
	}
	return writeJSON(w, out)
}

// writeChecksText prints one line per check and its fix under it:
//
//	ok       latency           median round trip 212µs over 5 requests ...
//	problem  maxmemory-policy  allkeys-lru (maxmemory 1073741824) evicts ...
//	                           fix: CONFIG SET maxmemory-policy noeviction ...
//
// then the engine's guarantee, the backend and a count of each verdict.
func writeChecksText(w io.Writer, pal palette, checks []lock.Check, guarantee, backend string) error {
	width := 0
	for _, c := range checks {
		width = max(width, len(c.Name))
	}
	var ok, warnings, problems int
	var b strings.Builder
	for _, c := range checks {
		status := pal.held
		switch c.Status {
		case lock.CheckOK:
			ok++
		case lock.CheckWarning:
			status = pal.free
			warnings++
		default:
			status = pal.expiring
			problems++
		}
		fmt.Fprintf(&b, "%s  %-*s  %s\n", status.Sprintf("%-7s", c.Status), width, c.Name, printable(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(&b, "%*s  fix: %s\n", 7+2+width, "", printable(c.Fix))
		}
	}
	fmt.Fprintf(&b, "\nengine:  %s\nbackend: %s\nsummary: %d ok, %s, %s\n",
		guarantee, backend, ok, plural(warnings, "warning"), plural(problems, "problem"))
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
