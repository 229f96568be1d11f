package child

import (
	"os"
	"syscall"
	"time"
)

// Stop asks the supervisor to end the command: SIGTERM to the group now,
// SIGKILL at KillAt.
type Stop struct {
	Reason error
	KillAt time.Time
}

// Outcome is how the command ended.
type Outcome struct {
	Code    int   // the command's exit status (128+N when killed by signal N; UnknownStatus)
	Stopped *Stop // non-nil when it was stopped through the stop channel
}

// groupPoll is how often a leftover group is checked once the leader is gone.
const groupPoll = 5 * time.Millisecond

// Supervise runs until the command and every process left in its group are
// gone. Signals received are forwarded to the group; a second SIGINT or
// SIGTERM kills it. A Stop terminates the group (TERM, then KILL at its
// KillAt). When the leader exits, whatever is left of its group gets
// SIGTERM and, after killGrace (or a Stop's earlier KillAt), SIGKILL:
// a background grandchild must never outlive the lock.
func (p *Process) Supervise(signals <-chan os.Signal, stop <-chan Stop, killGrace time.Duration) Outcome {
	var (
		out       Outcome
		leader    = p.done
		killTimer *time.Timer
		killAt    time.Time
		killC     <-chan time.Time
		tick      <-chan time.Time
		interrupt int
	)
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
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	for {
		select {
		case <-leader:
			leader = nil
			out.Code = p.code
			if !p.groupAlive() {
				return out
			}
			p.Signal(syscall.SIGTERM)
			scheduleKill(time.Now().Add(killGrace))
			ticker := time.NewTicker(groupPoll)
			defer ticker.Stop()
			tick = ticker.C
		case <-tick:
			if !p.groupAlive() {
				return out
			}
		case sig := <-signals:
			s, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			if s == syscall.SIGINT || s == syscall.SIGTERM {
				interrupt++
				if interrupt >= 2 {
					p.Signal(syscall.SIGKILL)
					continue
				}
			}
			p.Signal(s)
		case st := <-stop:
			// The first stop terminates the group and names the reason;
			// a later one (say the lease is lost during a --max-hold
			// stop) can only bring the SIGKILL forward.
			if out.Stopped == nil {
				out.Stopped = &st
				p.Signal(syscall.SIGTERM)
			}
			scheduleKill(st.KillAt)
		case <-killC:
			killC = nil
			p.Signal(syscall.SIGKILL)
		}
	}
}
