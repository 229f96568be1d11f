package metrics

import dto "github.com/prometheus/client_model/go"

// The metric names. Every series has a key label; the outcome series an
// outcome label too.
const (
	mStart       = "distlock_last_run_start_timestamp_seconds"
	mEnd         = "distlock_last_run_end_timestamp_seconds"
	mDuration    = "distlock_last_run_duration_seconds"
	mWait        = "distlock_last_run_wait_seconds"
	mExit        = "distlock_last_run_exit_code"
	mCommandExit = "distlock_last_run_command_exit_code"
	mSuccess     = "distlock_last_success_timestamp_seconds"
	mOutcome     = "distlock_last_run_outcome"
	mRuns        = "distlock_runs_total"
)

// family is one of distlock's families: its HELP text and type.
type family struct {
	help string
	typ  dto.MetricType
}

var gauge, counter = dto.MetricType_GAUGE, dto.MetricType_COUNTER

// families are distlock's own. Their HELP and TYPE lines are rewritten
// on every write (a file from an older distlock gets today's texts).
var families = map[string]family{
	mStart:       {"When the last distlock run of the key started (Unix time).", gauge},
	mEnd:         {"When the last distlock run of the key ended, its lock released (Unix time), whatever its outcome.", gauge},
	mDuration:    {"How long the last distlock run of the key took, waiting for the lock included.", gauge},
	mWait:        {"How long the last distlock run of the key waited for the lock (or until it gave up).", gauge},
	mExit:        {"distlock's own exit status in the last run of the key (a busy run's is 0 with --busy-exit-code 0).", gauge},
	mCommandExit: {"The command's exit status in the last run of the key (128+N if it died of signal N); absent when the last run's command did not end by itself (busy, lost, max_hold, skipped, error).", gauge},
	mSuccess:     {"When the key's command last exited 0 under distlock, its lock released (Unix time); absent until it first does.", gauge},
	mOutcome:     {"1 for how the last distlock run of the key ended, 0 for the others: ok (command exited 0), failed (command exited non-zero or died of a signal), busy, lost, max_hold, skipped (slot already done), error.", gauge},
	mRuns:        {"distlock runs of the key, by how they ended (see distlock_last_run_outcome; outcome=\"ran\" is an older distlock's count of commands run, whatever their status).", counter},
}
