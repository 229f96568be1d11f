// Package ledger is the run ledger of docs/ARCHITECTURE.md ("The run
// ledger"): what a run's entry says, how many a key keeps, whether a slot
// is done (--once-per, --slot), and the history `distlock history` and
// `status` show. It is engine-neutral: every engine stores entries as
// bytes behind lock.Ledger; this package writes and reads them the same
// way for all.
package ledger

import (
	"encoding/json"
	"fmt"
	"time"
)

// Outcome is how a run went.
type Outcome string

const (
	OK      Outcome = "ok"       // the command exited 0
	Failed  Outcome = "failed"   // it exited non-zero, or could not be started
	Killed  Outcome = "killed"   // it died of a signal (one distlock forwarded, or any other)
	Lost    Outcome = "lost"     // the lease was lost and the command stopped
	MaxHold Outcome = "max_hold" // it ran past --max-hold and was stopped
	Skipped Outcome = "skipped"  // its slot was done already: the command was not run
	// Running and Unknown are never stored: an entry with no end is
	// shown as Running while its run still holds the key, else Unknown
	// (its distlock died before it could write the end).
	Running Outcome = "running"
	Unknown Outcome = "unknown"
)

// Entry is one run, as the engine keeps it (JSON). Holder is the public
// holder id (lock.HolderID), never the secret owner id. Ended and
// ExitCode are null until the run ends.
type Entry struct {
	Token    uint64     `json:"token"`
	Host     string     `json:"host"`
	Holder   string     `json:"holder_id"`
	PID      int        `json:"pid"`
	Command  string     `json:"command"`
	Slot     string     `json:"slot"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended"`
	ExitCode *int       `json:"exit_code"`
	Outcome  Outcome    `json:"outcome"`
}

// PinnedID names the entry that holds a copy of the key's last successful
// run. It is never trimmed: it keeps that slot done even where the run's
// own entry is gone (an older distlock's trim deleted it). The trim keeps
// the successes of the other slots recently done (trim.go).
const PinnedID = "last-success"

// EntryID is the id of the run that started at started under holder:
// the start in µs since the epoch, zero-padded so that ids sort by start,
// then the holder id so that two runs of one µs differ.
func EntryID(started time.Time, holder string) string {
	return fmt.Sprintf("%020d-%s", started.UnixMicro(), holder)
}

// maxText bounds the free text of an entry (host, command) so that an
// entry stays well under lock.MaxEntryLen with a slot of MaxSlotLen.
const maxText = 512

func clip(s string) string {
	if len(s) > maxText {
		return s[:maxText]
	}
	return s
}

func (e Entry) encode() ([]byte, error) {
	e.Host, e.Command = clip(e.Host), clip(e.Command)
	return json.Marshal(e)
}

func decode(data []byte) (Entry, bool) {
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil || e.Started.IsZero() {
		return Entry{}, false
	}
	return e, true
}

// Duration is how long the run took; 0 while it has no end.
func (e Entry) Duration() time.Duration {
	if e.Ended == nil {
		return 0
	}
	return e.Ended.Sub(e.Started)
}
