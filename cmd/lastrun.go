package cmd

import (
	"fmt"
	"io"
	"time"

	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
)

// status's last run and last success, from the key's run ledger.

// keyStatusJSON is one key in status -o json: statusJSON, how many wait
// in its line (cmd/waiting.go), then the key's last run (the newest not running now: the holders are shown already)
// and last success from its run ledger (null when none).
type keyStatusJSON struct {
	statusJSON
	waitingJSON
	lastRunsJSON
}

type lastRunsJSON struct {
	LastRun     *ledger.Entry `json:"last_run"`
	LastSuccess *ledger.Entry `json:"last_success"`
}

func lastRuns(h ledger.History) lastRunsJSON {
	var l lastRunsJSON
	for i, e := range h.Runs {
		if e.Outcome != ledger.Running {
			l.LastRun = &h.Runs[i]
			break
		}
	}
	l.LastSuccess = h.LastSuccess
	return l
}

// printLastRuns prints the key's last run and last success under its
// status lines, when its ledger has them.
func printLastRuns(w io.Writer, h ledger.History) {
	l := lastRuns(h)
	if l.LastRun != nil {
		fmt.Fprintf(w, "  %-13s %s\n", "last run:", describeRun(*l.LastRun))
	}
	if l.LastSuccess != nil {
		fmt.Fprintf(w, "  %-13s %s\n", "last success:", describeRun(*l.LastSuccess))
	}
}

// describeRun is one line about a run for status: "ok (exit 0) at
// 2026-11-25T14:05:03Z on host-b, token 17, took 2s".
func describeRun(e ledger.Entry) string {
	s := string(e.Outcome)
	if e.ExitCode != nil {
		s += fmt.Sprintf(" (exit %d)", *e.ExitCode)
	}
	s += fmt.Sprintf(", started %s on %s pid %d, token %d", e.Started.UTC().Format(time.RFC3339), e.Host, e.PID, e.Token)
	if e.Ended != nil {
		s += ", took " + lock.RoundDuration(e.Duration())
	}
	if e.Slot != "" {
		s += ", slot " + e.Slot
	}
	return printable(s)
}
