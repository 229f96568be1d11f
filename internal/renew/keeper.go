// Package renew is the lease keeper: it renews a lease every TTL/3, tracks
// validUntil from the moment each successful request was sent, and reports
// a Loss early enough for the child to be stopped before anyone else could
// take the lock. No engine call can stall it: requests run on their own
// goroutine and the deadlines run on timers. The timers run on the
// monotonic clock, which stops while the machine is suspended; the keeper
// checks a clock that does not (see Clock) and counts a suspend against
// the lease.
package renew

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Loss says the lease is (or is about to be) gone and when the child's
// group must be dead at the latest.
type Loss struct {
	Err    error     // why, one line, for the user
	KillAt time.Time // SIGKILL the group at this moment
}

// Keeper renews one lease until stopped or lost.
type Keeper struct {
	lease  lock.Lease
	timing Timing
	clock  Clock
	log    *slog.Logger

	lost    chan Loss
	poke    chan struct{}
	confirm chan chan<- error
	stop    chan struct{}
	done    chan struct{}
}

// Start begins renewing lease; its first validity is counted from
// lease.Granted(). log may be nil.
func Start(lease lock.Lease, timing Timing, log *slog.Logger) *Keeper {
	return start(lease, timing, log, SystemClock)
}

func start(lease lock.Lease, timing Timing, log *slog.Logger, clock Clock) *Keeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Keeper{
		lease: lease, timing: timing, clock: clock, log: log,
		lost: make(chan Loss, 1), poke: make(chan struct{}, 1),
		confirm: make(chan chan<- error),
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
	// The suspended time at the start anchors the first validity (counted
	// from lease.Granted(), a moment ago).
	go k.loop(clock.Suspended())
	return k
}

// Lost delivers at most one Loss.
func (k *Keeper) Lost() <-chan Loss { return k.lost }

// Poke asks for a renewal now (used when a break may have happened).
func (k *Keeper) Poke() {
	select {
	case k.poke <- struct{}{}:
	default:
	}
}

// errStopped answers a Confirm once the keeper has stopped.
var errStopped = errors.New("the lease keeper has stopped")

// Confirm renews now and returns a channel that yields nil once a renewal
// sent after this call has succeeded, or an error once the lease is lost
// (the Loss is also delivered on Lost) or the keeper has stopped. A
// renewal that fails for a passing reason is retried as usual; Confirm
// waits for its outcome. Used after distlock was stopped (Ctrl-Z): its
// command is continued only once the lease is known to be still ours.
func (k *Keeper) Confirm() <-chan error {
	ch := make(chan error, 1)
	select {
	case k.confirm <- ch:
	case <-k.done:
		ch <- errStopped
	}
	return ch
}

// Stop ends renewing and waits for the loop to finish. A request in flight
// is cancelled, and Stop waits for it to return, so that once Stop returns
// nothing reads the lease any more (the caller may change it: Hold).
func (k *Keeper) Stop() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
}

// loop only dispatches: the keeper's state (state.go) handles each event,
// and io owns the timers and the renewal in flight.
func (k *Keeper) loop(suspendedAtStart time.Duration) {
	defer close(k.done)
	t := k.timing
	io := &keeperIO{k: k, results: make(chan result, 1)}
	s := newKeeperState(t, k.lease.Key(), k.lease.Granted(), suspendedAtStart, k.clock, time.Now, k.log, io)
	defer func() {
		io.finish() // after Stop nothing may touch the lease
		s.stopped() // the lease is lost, or we stop
	}()
	io.renewTimer = time.NewTimer(time.Until(k.lease.Granted().Add(t.Interval())))
	io.termTimer = time.NewTimer(time.Until(s.termAt()))
	suspendTicker := time.NewTicker(t.SuspendCheck())
	defer io.renewTimer.Stop()
	defer io.termTimer.Stop()
	defer suspendTicker.Stop()
	alerts := k.lease.Alerts()
	for lost := false; !lost; {
		select {
		case <-k.stop:
			return
		case due := <-suspendTicker.C:
			s.fired(due)
			lost = s.onSuspendCheck()
		case <-k.poke:
			lost = s.onPoke()
		case <-alerts:
			s.onAlert()
		case ch := <-k.confirm:
			s.onConfirm(ch)
		case due := <-io.renewTimer.C:
			s.fired(due)
			lost = s.onRenewDue()
		case r := <-io.results:
			io.returned()
			lost = s.onResult(r)
		case due := <-io.termTimer.C:
			s.fired(due)
			lost = s.onTermDue()
		}
	}
}

// keeperIO is the keeper's side of its state's effects: the timers, the
// renewal in flight on its own goroutine, the Lost channel.
type keeperIO struct {
	k                     *Keeper
	results               chan result
	inflight              context.CancelFunc
	renewTimer, termTimer *time.Timer
}

func (io *keeperIO) renew(sent time.Time, suspended time.Duration, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	io.inflight = cancel
	go func() {
		err := io.k.lease.Renew(ctx)
		io.results <- result{sent: sent, suspended: suspended, err: err}
	}()
}

func (io *keeperIO) renewIn(d time.Duration) { io.renewTimer.Reset(d) }
func (io *keeperIO) termIn(d time.Duration)  { io.termTimer.Reset(d) }
func (io *keeperIO) report(l Loss)           { io.k.report(l) }

// returned releases the context of the renewal whose result was received.
func (io *keeperIO) returned() {
	io.inflight()
	io.inflight = nil
}

// finish cancels a renewal in flight and waits for it to return.
func (io *keeperIO) finish() {
	if io.inflight != nil {
		io.inflight()
		<-io.results
	}
}

func (k *Keeper) report(l Loss) {
	k.log.Warn("lease lost", "key", k.lease.Key(), "reason", l.Err, "kill_in", time.Until(l.KillAt).Round(time.Millisecond))
	k.lost <- l
}
