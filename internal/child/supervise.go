package child

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stop asks the supervisor to end the command: SIGTERM to the group now,
// SIGKILL at KillAt.
type Stop struct {
	Reason error
	KillAt time.Time
	// LockLost: the lock is gone (or will be by KillAt), so waiting on for
	// a process that cannot be signalled no longer keeps it: Supervise
	// returns once only such processes are left after the SIGKILL, and
	// names them in Outcome.Unkillable.
	LockLost bool
}

// Outcome is how the command ended.
type Outcome struct {
	Code    int   // the command's exit status (128+N when killed by signal N; UnknownStatus)
	Killed  bool  // the command died of a signal (Code is 128+N)
	Stopped *Stop // non-nil when it was stopped through the stop channel
	// Unkillable lists processes of the command's group that distlock may
	// not signal (setuid, sudo) and that still ran when Supervise gave up
	// waiting for them, after a Stop that lost the lock.
	Unkillable []int
}

// Control is what Supervise answers to besides the command itself.
type Control struct {
	// Signals are forwarded to the group; a second SIGINT or SIGTERM
	// kills it.
	Signals <-chan os.Signal
	// Stops terminate the group (TERM, then KILL at the Stop's KillAt).
	Stops     <-chan Stop
	KillGrace time.Duration
	// Confirm is called when distlock is continued after it stopped itself
	// with its command (Ctrl-Z, SIGTSTP). The channel it returns must
	// yield nil once the lease is known to be still ours (a renewal sent
	// after the call succeeded), or an error once it is lost; the loss
	// itself must then arrive as a Stop. The command is continued only
	// after nil. A nil Confirm continues it at once.
	Confirm func() <-chan error
	Log     *slog.Logger // may be nil
}

// groupPoll is how often a leftover group is checked once the leader is
// gone, and a group being stopped before distlock stops itself.
const groupPoll = 5 * time.Millisecond

// unkillableLook is how often, after a SIGKILL that follows a lost lock,
// the group is searched for processes that cannot be signalled.
const unkillableLook = 100 * time.Millisecond

// stopGrace is how long the command's processes get to stop on their own
// after a SIGTSTP (an editor puts the terminal back first) before the
// ones still running get SIGSTOP.
const stopGrace = 100 * time.Millisecond

// Supervise runs until the command and every process left in its group
// (the watcher aside) are gone, then gives the terminal back and lets the
// watcher go. Signals received are forwarded to the group; a second
// SIGINT or SIGTERM kills it. A Stop terminates the group (TERM, then KILL
// at its KillAt). When the leader exits, whatever is left of its group
// gets SIGTERM and, after KillGrace (or a Stop's earlier KillAt), SIGKILL:
// a background grandchild must never outlive the lock. A process of the
// group that distlock may not signal (EPERM) still counts: the lock is
// kept until it ends, unless a Stop says the lock is lost.
//
// Job control. The command is never left running while distlock is
// stopped: SIGTSTP sent to distlock is passed to the group, and once every
// process of it has stopped (SIGSTOP for the ones still running after
// stopGrace), distlock stops itself (SIGSTOP: it cannot be refused). On a
// terminal, a job-control stop of the command (Ctrl-Z, or reading the
// terminal from the background) does the same, and the terminal goes back
// to distlock's group first, so the shell gets it ("Stopped"). When
// distlock is continued (fg, bg, SIGCONT), the group is continued only
// once Confirm says the lease is still ours, in the terminal's foreground
// if distlock is in it; if the lease was lost meanwhile the group is
// killed where it stands.
func (p *Process) Supervise(c Control) Outcome {
	s := newSupervisor(p, c)
	defer p.finish()
	defer s.close()
	for {
		select {
		case <-s.leader:
			if s.leaderExited() {
				return s.ended()
			}
		case <-s.tick:
			if s.polled() {
				return s.ended()
			}
		case err := <-s.confirming:
			s.confirmed(err)
		case sig := <-p.jobSigs:
			s.jobSignal(sig)
		case sig := <-c.Signals:
			s.signalled(sig)
		case st := <-c.Stops:
			s.stopped(st)
		case <-s.killC:
			s.killDue()
		}
	}
}

// supervisor is Supervise's state: one method per event, each returning
// true when Supervise is done (the whole group is gone, or all that is
// left of it is out of reach after the lock was lost).
type supervisor struct {
	p   *Process
	c   Control
	log *slog.Logger
	out Outcome

	leader    <-chan struct{} // the command's end; nil once it has exited
	killTimer *time.Timer
	killAt    time.Time // the SIGKILL deadline (the earliest asked for)
	killC     <-chan time.Time
	killed    bool      // a SIGKILL was sent
	killedAt  time.Time // when
	poll      *time.Ticker
	tick      <-chan time.Time // the group is polled
	interrupt int              // SIGINTs and SIGTERMs received
	warned    bool             // about a process that cannot be signalled
	// when the group was last searched for processes out of reach
	lookedUnkillable time.Time

	// job control
	stopping   bool      // stopping the group before distlock stops itself
	stopSince  time.Time // when stopping began
	stopSig    syscall.Signal
	confirming <-chan error // continued: waiting for Confirm
	// stopSelf stops distlock until it is continued (stopSelf; a test
	// that must not stop itself records the moment instead).
	stopSelf func()
}

func newSupervisor(p *Process, c Control) *supervisor {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &supervisor{p: p, c: c, log: log, leader: p.done, stopSelf: stopSelf}
}

// close stops the timers.
func (s *supervisor) close() {
	if s.killTimer != nil {
		s.killTimer.Stop()
	}
	s.stopPolling()
}

// scheduleKill sets the SIGKILL deadline, keeping the earliest one.
func (s *supervisor) scheduleKill(at time.Time) {
	if !s.killAt.IsZero() && !at.Before(s.killAt) {
		return
	}
	s.killAt = at
	if s.killTimer != nil {
		s.killTimer.Stop()
	}
	s.killTimer = time.NewTimer(time.Until(at))
	s.killC = s.killTimer.C
}

func (s *supervisor) startPolling() {
	if s.poll == nil {
		s.poll = time.NewTicker(groupPoll)
		s.tick = s.poll.C
	}
}

func (s *supervisor) stopPolling() {
	if s.poll != nil {
		s.poll.Stop()
		s.poll, s.tick = nil, nil
	}
}

// leaderExited: the command has exited. Its status is the outcome's;
// whatever is left of its group gets SIGTERM now and SIGKILL after
// KillGrace (or a Stop's earlier KillAt).
func (s *supervisor) leaderExited() bool {
	s.leader = nil
	s.out.Code, s.out.Killed = s.p.code, s.p.sig
	s.stopping, s.confirming = false, nil
	s.p.takeTerminal()
	if !s.p.groupRunning() {
		s.p.termUnseen()
		return true
	}
	s.p.signalGroup(syscall.SIGTERM)
	s.scheduleKill(time.Now().Add(s.c.KillGrace))
	s.startPolling()
	return false
}

// polled: the group is looked at, once the leader is gone or a SIGKILL
// was sent (is it gone? is all that is left out of reach?), and while it
// is being stopped (has all of it stopped?).
func (s *supervisor) polled() bool {
	if (s.leader == nil || s.killed) && s.groupEnded() {
		return true
	}
	if s.stopping && s.p.allStopped(time.Since(s.stopSince) > stopGrace) {
		s.groupSuspended()
	}
	return false
}

// groupEnded reports whether the group is gone (the leader too), or all
// that runs on of it cannot be signalled after the SIGKILL that followed a
// lost lock.
func (s *supervisor) groupEnded() bool {
	if !s.p.groupRunning() && s.leader == nil {
		return true
	}
	if !s.warned {
		if pids := s.p.knownUnsignallable(); len(pids) > 0 {
			s.warned = true
			s.log.Warn("a process of the command's group cannot be signalled (setuid?); keeping the lock until it ends", "pids", pids)
		}
	}
	if !s.killed || s.out.Stopped == nil || !s.out.Stopped.LockLost || time.Since(s.lookedUnkillable) < unkillableLook {
		return false
	}
	// The lock is gone and SIGKILL was sent: if all that runs on is out
	// of our reach, waiting keeps nothing. (Two scans of /proc: not on
	// every tick, which would take CPU from whatever runs next.)
	s.lookedUnkillable = time.Now()
	un := s.p.unsignallable()
	if len(un) == 0 || len(un) != s.p.runningCount() {
		return false
	}
	s.out.Unkillable = un
	if s.leader != nil {
		s.out.Code, s.out.Killed = 128+int(syscall.SIGKILL), true
	}
	return true
}

// groupSuspended: every process of the group has stopped; distlock stops
// itself until it is continued, then asks Confirm before continuing the
// group.
func (s *supervisor) groupSuspended() {
	s.stopping = false
	if s.leader != nil && !s.killed {
		s.stopPolling()
	}
	s.log.Info("command stopped; stopping distlock too until it is continued (fg): the lease is not renewed meanwhile", "signal", SignalName(s.stopSig))
	s.p.takeTerminal()
	s.stopSelf()
	if s.c.Confirm == nil {
		s.p.continueGroup()
		return
	}
	s.log.Info("continued; confirming the lease before continuing the command")
	s.confirming = s.c.Confirm()
}

// confirmed: Confirm answered. The group is continued only if the lease
// is still ours and nothing ended or stopped it meanwhile; if it was
// lost, the Stop that says so kills the group.
func (s *supervisor) confirmed(err error) {
	s.confirming = nil
	if err != nil || s.out.Stopped != nil || s.leader == nil || s.stopping {
		return
	}
	s.log.Info("continued: the lease is still ours; continuing the command")
	s.p.continueGroup()
}

// jobSignal: SIGTSTP sent to distlock (passed to the group, which is then
// stopped), or SIGCHLD, which may say that the command stopped on a job-
// control signal at a terminal.
func (s *supervisor) jobSignal(sig os.Signal) {
	switch sig {
	case syscall.SIGTSTP:
		if s.leader != nil && s.out.Stopped == nil && !s.stopping {
			s.p.signalGroup(syscall.SIGTSTP) // as Ctrl-Z would
			s.suspend(syscall.SIGTSTP)
		}
	case syscall.SIGCHLD:
		if s.p.term == nil || s.leader == nil {
			return
		}
		if stop, ok := jobStop(s.p.pid); ok && s.confirming == nil {
			s.suspend(stop)
		}
	}
}

// suspend begins stopping the group; distlock stops itself once all of
// it has stopped (polled).
func (s *supervisor) suspend(sig syscall.Signal) {
	if s.leader == nil || s.out.Stopped != nil || s.stopping {
		return
	}
	s.stopping, s.stopSince, s.stopSig, s.confirming = true, time.Now(), sig, nil
	s.startPolling()
}

// signalled: a signal to distlock is forwarded to the group; a second
// SIGINT or SIGTERM kills it.
func (s *supervisor) signalled(sig os.Signal) {
	sg, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	if sg == syscall.SIGINT || sg == syscall.SIGTERM {
		s.interrupt++
		if s.interrupt >= 2 {
			s.p.signalGroup(syscall.SIGKILL)
			return
		}
	}
	s.p.signalGroup(sg)
}

// stopped: a Stop (the lease lost, --max-hold). The first one terminates
// the group and names the reason; a later one (say the lease is lost
// during a --max-hold stop) can only bring the SIGKILL forward, or say
// the lock is lost. A stopped group is not continued any more: it gets
// the SIGTERM when continued, or the SIGKILL where it stands.
func (s *supervisor) stopped(st Stop) {
	s.stopping, s.confirming = false, nil
	if s.out.Stopped == nil {
		s.out.Stopped = &st
		s.p.signalGroup(syscall.SIGTERM)
	} else if st.LockLost && !s.out.Stopped.LockLost {
		reason := s.out.Stopped.Reason
		s.out.Stopped = &st
		s.out.Stopped.Reason = reason
	}
	s.scheduleKill(st.KillAt)
}

// killDue: the SIGKILL deadline has come. How late it came is logged
// (the lease's arithmetic allows for it: renew.Timing.Lead).
func (s *supervisor) killDue() {
	s.killC = nil
	now := time.Now()
	s.killed, s.killedAt, s.lookedUnkillable = true, now, now
	s.p.signalGroup(syscall.SIGKILL)
	s.log.Debug("SIGKILL sent to the command's group", "late", s.killedAt.Sub(s.killAt).Round(time.Microsecond))
	s.startPolling()
}

// ended is the outcome once the group is gone (or out of reach); after a
// SIGKILL, how long it took to go is logged.
func (s *supervisor) ended() Outcome {
	if s.killed && len(s.out.Unkillable) == 0 {
		s.log.Debug("the command's group is gone", "after_sigkill", time.Since(s.killedAt).Round(time.Microsecond))
	}
	return s.out
}

// stopSelf stops distlock (SIGSTOP: it cannot be refused) and returns
// once it has been continued. kill(2) of one's own pid does not stop the
// calling thread at once in a process with many threads; SIGCONT, which
// the kernel delivers once the process is continued, says when it was.
func stopSelf() {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
}

// SignalName is a signal's name as users know it ("SIGTERM"), for
// messages; the one place distlock spells signals.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}
