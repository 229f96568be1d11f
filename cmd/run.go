package cmd

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/renew"
	"github.com/distlock/distlock/internal/runner"
)

type runOptions struct {
	g *globalOptions
	lockFlags
	KillGrace time.Duration
	Limit     int
	MinHold   time.Duration
	MaxHold   time.Duration
	Metrics   string
	ledgerFlags
}

func newRunCommand(g *globalOptions) *cobra.Command {
	o := &runOptions{g: g}
	c := &cobra.Command{
		Use:   "run --key KEY [flags] -- COMMAND [ARGS...]",
		Short: "Run a command while holding the lock on KEY",
		Long: `Run COMMAND while holding a lease-based lock on KEY. The lease is renewed
every ttl/3; if renewal keeps failing, the command's process group gets
SIGTERM kill-grace before the lease could expire and SIGKILL just before.
The command sees DISTLOCK_KEY, DISTLOCK_TOKEN (a fencing token that rises
with every acquisition), DISTLOCK_OWNER (this holder's secret: keep it out
of logs), DISTLOCK_TTL and DISTLOCK_BACKEND (password redacted). It does
not inherit DISTLOCK_PASSWORD: distlock's password is for distlock alone.

Exit status: the command's own (128+N if killed by signal N; 127 not found,
126 not executable); 64 usage; 69 engine unreachable; 77 credentials
refused (64 also for a --limit other than the one the key's current
holders use: at once, even with --wait); 70 internal error;
75 busy (--busy-exit-code); 76 lock lost (the command was terminated, or never started); 124 the
command ran past --max-hold; 129, 130, 131, 143 interrupted (SIGHUP, SIGINT,
SIGQUIT, SIGTERM) before the command started. The command's own status
passes through even when it is one of these: distlock's own come with its
one line on stderr.

--once-per D (or --slot NAME): run the command at most once per slot. Once
the lock is held, the key's run ledger is read: if a run of this slot
ended with exit 0, the command is not run, one line names that run
(--quiet silences it) and distlock exits 0. A failed, killed, lost or
max-hold run leaves the slot open. The command sees its slot in
DISTLOCK_RUN_SLOT. Every run is recorded for distlock history
(--history N runs kept per key).`,
		Example: `  distlock run --key job:daily --ttl 30s -- ./job.sh
  distlock run --key deploy --wait 10m --note "release 1.4" -- make deploy
  distlock --backend redis://redis:6379 run --key job:daily --busy-exit-code 0 --quiet -- ./job.sh
  distlock run --key job:daily --once-per 24h --wait 10m --busy-exit-code 0 -- ./job.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("no command given: put it after --, as in: distlock run --key KEY -- COMMAND")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.ledgerFlags.check(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context(), args)
		},
	}
	c.Flags().SetInterspersed(false)
	o.ledgerFlags.add(c)
	o.lockFlags.add(c, 30*time.Second, "lease time-to-live (at least 1s); renewed every ttl/3")
	f := c.Flags()
	f.DurationVar(&o.KillGrace, "kill-grace", 0, "time between SIGTERM and SIGKILL when the command must stop (default min(10s, ttl/3); less than ttl/2)")
	f.DurationVar(&o.MinHold, "min-hold", 0, "keep the lock until this long after acquiring it, even if the command ends sooner (cron replicas firing seconds apart run the job once); not kept if distlock itself is SIGKILLed while the command runs")
	f.DurationVar(&o.MaxHold, "max-hold", 0, "stop the command (TERM, kill-grace, KILL) this long after acquiring; exit 124")
	f.IntVar(&o.Limit, "limit", 1, "semaphore: up to N holders at once, each in a slot (DISTLOCK_SLOT); all holders must agree on N")
	f.StringVar(&o.Metrics, "metrics-file", "", "after the run, record it in this Prometheus textfile (node_exporter's textfile collector; env DISTLOCK_METRICS_FILE)")
	return c
}

func (o *runOptions) validate() (wait time.Duration, err error) {
	if wait, err = o.lockFlags.check(); err != nil {
		return 0, err
	}
	if o.KillGrace == 0 {
		o.KillGrace = renew.DefaultKillGrace(o.TTL)
	}
	if o.KillGrace < 0 || o.KillGrace >= o.TTL/2 {
		return 0, lock.Invalidf("--kill-grace must be positive and less than ttl/2 (%s), got %s", o.TTL/2, o.KillGrace)
	}
	if o.MinHold < 0 || o.MaxHold < 0 {
		return 0, lock.Invalidf("--min-hold and --max-hold must not be negative")
	}
	if o.Limit < 1 || o.Limit > 1000 {
		return 0, lock.Invalidf("--limit must be 1-1000, got %d", o.Limit)
	}
	return wait, nil
}

func (o *runOptions) run(ctx context.Context, args []string) error {
	wait, err := o.validate()
	if err != nil {
		return err
	}
	rec := startRecord(metricsFile(o.Metrics), o.Key)
	err = o.lockAndRun(ctx, args, wait, rec)
	final := err
	if busy := o.busy(err, wait); busy != nil {
		final = busy
	}
	if skipped := skippedRun(err, o.Quiet); skipped != nil {
		final = skipped
	}
	rec.write(err, final, o.g.logger())
	return final
}

// lockAndRun takes the lock and runs the command: nil, the command's
// status (commandExit) or why it did not run to its end.
func (o *runOptions) lockAndRun(ctx context.Context, args []string, wait time.Duration, rec *runRecord) error {
	slot := o.slot(time.Now())
	b, err := o.g.open(ctx)
	if err != nil {
		return err
	}
	log := o.g.logger()
	defer closeEngine(b, log)
	req, err := newRequest(o.Key, o.TTL, o.Limit, args[0], o.Note)
	if err != nil {
		return err
	}
	rl, err := o.runLedger(b, req, slot, log)
	if err != nil {
		return err
	}
	wp := newWaitProgress(o.g, o.g.waitLogger(), o.Key, o.Quiet)
	wp.inspect = b.Inspect
	defer wp.stop()
	code, err := runner.Run(ctx, runner.Config{
		Backend:        b,
		BackendDesc:    o.g.describeBackend(),
		Request:        req,
		Wait:           wait,
		KillGrace:      o.KillGrace,
		MinHold:        o.MinHold,
		MaxHold:        o.MaxHold,
		ReleaseTimeout: o.g.ConnectTimeout,
		Args:           args,
		Stdin:          o.g.stdin, Stdout: o.g.stdout, Stderr: o.g.stderr,
		Log:        log,
		OnBusy:     wp.busy,
		OnAcquired: func() { rec.markAcquired(); wp.stop() },
		Ledger:     runnerLedger(rl),
		Env:        slotEnv(slot),
	})
	if err != nil {
		return err
	}
	return commandStatus(code)
}
