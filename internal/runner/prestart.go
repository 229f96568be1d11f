package runner

import (
	"context"
	"os"
	"syscall"
	"time"
)

// prestart is the way from "acquired" to "command started": the ledger's
// Begin (record.go), bounded by cfg.ReleaseTimeout and by the lease, and
// then the check that the lease is still ours. A Loss from the keeper (its
// term time, the moment the command would be stopped, has come) or a
// terminating signal cancels Begin and ends the run there: the command is
// never started (*LostError with NotStarted, *InterruptedError), and Run
// releases the lock. SIGUSR1 and SIGUSR2 are kept for the command, and
// SIGWINCH pokes the keeper, as while the command runs.
//
// A ledger answer counts only if it came while the lease was certainly
// ours: before the first term time (startBy, reckoned from the grant,
// well before the engine's earliest expiry), or, when the ledger took
// longer than that, if a renewal sent after the answer succeeds
// (Keeper.Confirm): the engine renews only a lease nobody else has taken
// meanwhile. Otherwise a --slot or --once-per run could find its slot
// open in an answer read after another holder took the lock, and both
// run it.
func (r *run) prestart(ctx context.Context) error {
	bctx, cancel := context.WithTimeout(ctx, r.cfg.ReleaseTimeout)
	defer cancel()
	begun := make(chan error, 1)
	go func() { begun <- r.begin(bctx) }()
	var (
		stop    error        // why the command must not start
		confirm <-chan error // the Confirm after a slow ledger
		kept    []os.Signal  // for the command, once it runs
		lost    = r.keeper.Lost()
	)
	defer func() { r.requeue(kept) }()
	for {
		select {
		case err := <-begun:
			switch {
			case stop != nil:
				return stop
			case err != nil:
				return err
			case !time.Now().Before(r.startBy):
				confirm = r.keeper.Confirm()
				continue
			}
			return r.heldNow()
		case err := <-confirm:
			if err != nil {
				return r.lostBeforeStart(err)
			}
			return r.heldNow()
		case l := <-lost:
			lost = nil
			stop = r.lostBeforeStart(l.Err)
			cancel()
			if confirm != nil {
				return stop
			}
		case s := <-r.sigs:
			sig, ok := s.(syscall.Signal)
			if !ok || sig == syscall.SIGUSR1 || sig == syscall.SIGUSR2 {
				kept = append(kept, s)
				continue
			}
			if stop == nil {
				stop = &InterruptedError{Key: r.lease.Key(), Signal: sig, Acquired: true}
				cancel()
				if confirm != nil {
					return stop
				}
			}
		case <-r.pokes:
			r.keeper.Poke()
		}
	}
}

// heldNow is the last look before the command starts: a Loss the keeper
// reported, or a terminating signal, that came with the answer.
func (r *run) heldNow() error {
	select {
	case l := <-r.keeper.Lost():
		return r.lostBeforeStart(l.Err)
	default:
	}
	for {
		select {
		case s := <-r.sigs:
			if sig, ok := s.(syscall.Signal); ok && sig != syscall.SIGUSR1 && sig != syscall.SIGUSR2 {
				return &InterruptedError{Key: r.lease.Key(), Signal: sig, Acquired: true}
			}
			defer r.requeue([]os.Signal{s})
		default:
			return nil
		}
	}
}

func (r *run) lostBeforeStart(why error) error {
	r.log.Warn("lost the lock before the command started; it is not started", "key", r.lease.Key(), "reason", why)
	return &LostError{Key: r.lease.Key(), Reason: why, NotStarted: true}
}

// requeue puts signals meant for the command back where the supervisor
// reads them (a full queue drops them, as signal.Notify does).
func (r *run) requeue(sigs []os.Signal) {
	for _, s := range sigs {
		select {
		case r.sigs <- s:
		default:
		}
	}
}
