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
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		out       Outcome
		leader    = p.done
		killTimer *time.Timer
		killAt    time.Time
		killC     <-chan time.Time
		killed    bool // a SIGKILL was sent
		poll      *time.Ticker
		tick      <-chan time.Time // the group is polled
		interrupt int
		warned    bool // about a process that cannot be signalled
		// when the group was last searched for processes out of reach
		lookedUnkillable time.Time

		// job control
		stopping   bool      // stopping the group before distlock stops itself
		stopSince  time.Time // when stopping began
		stopSig    syscall.Signal
		confirming <-chan error // continued: waiting for Confirm
	)
	defer p.finish()
	// scheduleKill sets the SIGKILL deadline, keeping the earliest one.
	scheduleKill := func(at time.Time) {
		if !killAt.IsZero() && !at.Before(killAt) {
			return
		}
		killAt = at
		if killTimer != nil {
			killTimer.Stop()
		}
		killTimer = time.NewTimer(time.Until(at))
		killC = killTimer.C
	}
	startPolling := func() {
		if poll == nil {
			poll = time.NewTicker(groupPoll)
			tick = poll.C
		}
	}
	stopPolling := func() {
		if poll != nil {
			poll.Stop()
			poll, tick = nil, nil
		}
	}
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
		stopPolling()
	}()
	// suspend begins stopping the group; distlock stops itself once all
	// of it has stopped (see the tick).
	suspend := func(sig syscall.Signal) {
		if leader == nil || out.Stopped != nil || stopping {
			return
		}
		stopping, stopSince, stopSig, confirming = true, time.Now(), sig, nil
		startPolling()
	}
	for {
		select {
		case <-leader:
			leader = nil
			out.Code = p.code
			stopping, confirming = false, nil
			p.takeTerminal()
			if !p.groupRunning() {
				return out
			}
			p.signalGroup(syscall.SIGTERM)
			scheduleKill(time.Now().Add(c.KillGrace))
			startPolling()
		case <-tick:
			if leader == nil || killed {
				if !p.groupRunning() && leader == nil {
					return out
				}
				if !warned {
					if pids := p.knownUnsignallable(); len(pids) > 0 {
						warned = true
						log.Warn("a process of the command's group cannot be signalled (setuid?); keeping the lock until it ends", "pids", pids)
					}
				}
				if killed && out.Stopped != nil && out.Stopped.LockLost && time.Since(lookedUnkillable) >= unkillableLook {
					// The lock is gone and SIGKILL was sent: if all that
					// runs on is out of our reach, waiting keeps nothing.
					// (Two scans of /proc: not on every tick, which would
					// take CPU from whatever runs next.)
					lookedUnkillable = time.Now()
					if un := p.unsignallable(); len(un) > 0 && len(un) == p.runningCount() {
						out.Unkillable = un
						if leader != nil {
							out.Code = 128 + int(syscall.SIGKILL)
						}
						return out
					}
				}
			}
			if stopping && p.allStopped(time.Since(stopSince) > stopGrace) {
				stopping = false
				if leader != nil && !killed {
					stopPolling()
				}
				log.Info("command stopped; stopping distlock too until it is continued (fg): the lease is not renewed meanwhile", "signal", SignalName(stopSig))
				p.takeTerminal()
				stopSelf()
				if c.Confirm == nil {
					p.continueGroup()
					continue
				}
				log.Info("continued; confirming the lease before continuing the command")
				confirming = c.Confirm()
			}
		case err := <-confirming:
			confirming = nil
			if err != nil || out.Stopped != nil || leader == nil || stopping {
				continue // lost: the Stop that says so kills the group
			}
			log.Info("continued: the lease is still ours; continuing the command")
			p.continueGroup()
		case s := <-p.jobSigs:
			switch s {
			case syscall.SIGTSTP:
				if leader != nil && out.Stopped == nil && !stopping {
					p.signalGroup(syscall.SIGTSTP) // as Ctrl-Z would
					suspend(syscall.SIGTSTP)
				}
			case syscall.SIGCHLD:
				if p.term == nil || leader == nil {
					continue
				}
				if sig, ok := jobStop(p.pid); ok && confirming == nil {
					suspend(sig)
				}
			}
		case sig := <-c.Signals:
			s, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			if s == syscall.SIGINT || s == syscall.SIGTERM {
				interrupt++
				if interrupt >= 2 {
					p.signalGroup(syscall.SIGKILL)
					continue
				}
			}
			p.signalGroup(s)
		case st := <-c.Stops:
			// The first stop terminates the group and names the reason;
			// a later one (say the lease is lost during a --max-hold
			// stop) can only bring the SIGKILL forward, or say the lock
			// is lost. A stopped group is not continued any more: it gets
			// the SIGTERM when continued, or the SIGKILL where it stands.
			stopping, confirming = false, nil
			if out.Stopped == nil {
				out.Stopped = &st
				p.signalGroup(syscall.SIGTERM)
			} else if st.LockLost && !out.Stopped.LockLost {
				reason := out.Stopped.Reason
				out.Stopped = &st
				out.Stopped.Reason = reason
			}
			scheduleKill(st.KillAt)
		case <-killC:
			killC = nil
			killed, lookedUnkillable = true, time.Now()
			p.signalGroup(syscall.SIGKILL)
			startPolling()
		}
	}
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
