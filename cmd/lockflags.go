package cmd

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/acquire"
	"github.com/distlock/distlock/internal/lock"
)

// lockFlags are the flags run and acquire share: which lock, for how long,
// how long to wait for it and what to say when it is busy.
type lockFlags struct {
	Key          string
	TTL          time.Duration
	Wait         string
	Note         string
	BusyExitCode int
	Quiet        bool
}

// add defines the flags on c, with ttl as the default of --ttl and
// ttlUsage its help: a renewed lease and a held one differ there.
func (f *lockFlags) add(c *cobra.Command, ttl time.Duration, ttlUsage string) {
	fs := c.Flags()
	fs.StringVar(&f.Key, "key", "", "name of the lock (required; 1-512 bytes of printable text)")
	fs.DurationVar(&f.TTL, "ttl", ttl, ttlUsage)
	fs.StringVar(&f.Wait, "wait", "0", "how long to wait for a busy lock: 0 tries once, a duration, or forever")
	fs.StringVar(&f.Note, "note", "", "a note shown by status and list, e.g. a ticket or release name")
	fs.IntVar(&f.BusyExitCode, "busy-exit-code", exitBusy, "exit status when the lock is busy (0-255; cron users set 0)")
	fs.BoolVarP(&f.Quiet, "quiet", "q", false, "print nothing when the lock is busy")
}

// check validates the flags (exit 64 on mistakes) and returns how long to
// wait.
func (f *lockFlags) check() (wait time.Duration, err error) {
	if err := lock.ValidateKey(f.Key); err != nil {
		return 0, err
	}
	if f.TTL < time.Second {
		return 0, lock.Invalidf("--ttl must be at least 1s, got %s", f.TTL)
	}
	if f.BusyExitCode < 0 || f.BusyExitCode > 255 {
		return 0, lock.Invalidf("--busy-exit-code must be 0-255, got %d", f.BusyExitCode)
	}
	return parseWait(f.Wait)
}

// busy is err as --busy-exit-code and --quiet want it when the lock was
// busy; nil when it was not.
func (f *lockFlags) busy(err error, wait time.Duration) error {
	return busyError(err, wait, f.BusyExitCode, f.Quiet)
}

// parseWait reads --wait: 0, a Go duration, or "forever".
func parseWait(s string) (time.Duration, error) {
	if strings.EqualFold(s, "forever") {
		return acquire.Forever, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, lock.Invalidf("--wait must be a duration such as 30s or 10m, or forever; got %q", s)
	}
	return d, nil
}
