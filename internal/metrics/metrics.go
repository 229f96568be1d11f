// Package metrics records each `distlock run` in a Prometheus textfile, the
// format node_exporter's textfile collector reads: the last run of each key
// (start, end, duration, wait, distlock's exit code, the command's exit
// code, outcome), when the key's command last succeeded, and a count of
// runs by outcome. Several keys, several distlock processes and other
// writers share one file: each write merges its key's series into the file
// under a lock on a sidecar file, keeps every other series as it is, and
// replaces the file by renaming a complete new one, so a reader never sees
// half a file. The file and its sidecar are opened only as regular files,
// never through a symbolic link: the directory may be shared, and anyone
// who can write it may plant names. The file is read and written with
// Prometheus's own text format library (expfmt).
package metrics

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Outcome is how a run ended.
type Outcome string

const (
	OK      Outcome = "ok"       // the command ran and exited 0
	Failed  Outcome = "failed"   // the command ran and exited non-zero, or died of a signal
	Busy    Outcome = "busy"     // the lock was held by someone else
	Lost    Outcome = "lost"     // the lock was lost while the command ran; distlock stopped it
	MaxHold Outcome = "max_hold" // the command ran past --max-hold; distlock stopped it
	// Skipped: a --once-per / --slot run found its slot already done and
	// did not run the command. cmd's outcomeOf maps that run's result to it.
	Skipped Outcome = "skipped"
	Error   Outcome = "error" // anything else: engine unreachable, interrupted, cannot start the command, its end unknown
)

// Outcomes are every outcome distlock writes, in the order the HELP text
// lists them.
var Outcomes = []Outcome{OK, Failed, Busy, Lost, MaxHold, Skipped, Error}

// legacyRan is the outcome distlock wrote before it told ok from failed
// (any command that ran). Files written then may still hold it: its
// distlock_runs_total series are kept as they are and no longer rise; its
// distlock_last_run_outcome series goes when the key is next written.
const legacyRan Outcome = "ran"

// Run is one finished `distlock run`.
type Run struct {
	Key      string
	Start    time.Time     // when distlock started
	End      time.Time     // when it was done (the lock released)
	Wait     time.Duration // how long it waited for the lock (or until it gave up)
	ExitCode int           // distlock's own exit status
	Outcome  Outcome
	// CommandExit is the command's own exit status (128+N if it died of
	// signal N), read only when the command ended by itself: Outcome OK
	// (it must then be 0) or Failed (it must not).
	CommandExit int
}

// lockWait bounds the wait for another distlock writing the same file.
const lockWait = 10 * time.Second

// Write records r in the textfile at path: r.Key's series are replaced,
// its counter for r.Outcome incremented and, after an OK run, its last
// success moved; every other series and family in the file is kept as it
// is. A file that is not Prometheus text is left alone and Write fails.
func Write(path string, r Run) error {
	if err := r.check(); err != nil {
		return err
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	fams, err := readFile(path)
	if err != nil {
		return err
	}
	merge(fams, r)
	data, err := render(fams)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return replace(path, data)
}

// readFile is the families in path; none if there is no file yet. A link,
// FIFO or anything else but a regular file at path is refused
// (openRegular).
func readFile(path string) (map[string]*dto.MetricFamily, error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*dto.MetricFamily{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	old, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	fams, err := parse(old)
	if err != nil {
		return nil, fmt.Errorf("%s is not Prometheus text format, left as it is: %w", path, err)
	}
	return fams, nil
}

func (r Run) check() error {
	switch {
	case !slices.Contains(Outcomes, r.Outcome):
		return fmt.Errorf("unknown outcome %q", r.Outcome)
	case r.Outcome == OK && r.CommandExit != 0:
		return fmt.Errorf("an ok run with command exit status %d", r.CommandExit)
	case r.Outcome == Failed && r.CommandExit == 0:
		return errors.New("a failed run with command exit status 0")
	}
	return nil
}

// seconds is t as Unix seconds, to the millisecond.
func seconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
