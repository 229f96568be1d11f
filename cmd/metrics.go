package cmd

import (
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/distlock/distlock/internal/child"
	"github.com/distlock/distlock/internal/ledger"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/metrics"
	"github.com/distlock/distlock/internal/runner"
)

// runRecord times one run for --metrics-file; a nil *runRecord (no file)
// records nothing.
type runRecord struct {
	path, key       string
	start, acquired time.Time
}

// metricsFile is --metrics-file, else DISTLOCK_METRICS_FILE.
func metricsFile(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("DISTLOCK_METRICS_FILE")
}

func startRecord(path, key string) *runRecord {
	if path == "" {
		return nil
	}
	return &runRecord{path: path, key: key, start: time.Now()}
}

// markAcquired notes when the lock was taken: the wait ends there.
func (r *runRecord) markAcquired() {
	if r != nil {
		r.acquired = time.Now()
	}
}

// write records the run: raw is what the run ended with (before
// --busy-exit-code), final what distlock exits with. A file that cannot be
// written is a warning; the run's own result stands.
func (r *runRecord) write(raw, final error, log *slog.Logger) {
	if r == nil {
		return
	}
	end := time.Now()
	wait := end.Sub(r.start)
	if !r.acquired.IsZero() {
		wait = r.acquired.Sub(r.start)
	}
	code, _ := codeFor(final)
	outcome, commandExit := outcomeOf(raw)
	err := metrics.Write(r.path, metrics.Run{
		Key: r.key, Start: r.start, End: end, Wait: wait, ExitCode: code,
		Outcome: outcome, CommandExit: commandExit,
	})
	if err != nil {
		log.Warn("cannot write --metrics-file; the run's result stands", "file", r.path, "error", err)
	}
}

// outcomeOf is how a run that ended with err went and, when the command
// ended by itself (ok or failed), its own exit status. Each kind of result
// maps to one outcome here; a run whose --once-per or --slot slot was
// already done (*ledger.SkippedError) is skipped.
func outcomeOf(err error) (o metrics.Outcome, status int) {
	var (
		ce   *commandExit
		busy *lock.BusyError
		lost *runner.LostError
		maxh *runner.MaxHoldError
		skip *ledger.SkippedError
	)
	switch {
	case err == nil:
		return metrics.OK, 0
	case errors.As(err, &ce):
		if ce.status == child.UnknownStatus {
			return metrics.Error, 0
		}
		return metrics.Failed, ce.status
	case errors.As(err, &busy):
		return metrics.Busy, 0
	case errors.As(err, &lost):
		return metrics.Lost, 0
	case errors.As(err, &maxh):
		return metrics.MaxHold, 0
	case errors.As(err, &skip):
		return metrics.Skipped, 0
	}
	return metrics.Error, 0
}
