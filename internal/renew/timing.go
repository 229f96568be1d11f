package renew

import (
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Timing is the lease arithmetic of docs/ARCHITECTURE.md ("Timing"), kept pure so it
// can be tested on its own.
type Timing struct {
	TTL       time.Duration
	KillGrace time.Duration
	// HeldWhileAlive: the lease cannot pass to anyone else while this
	// process holds it, however long renewals take (a lock.FileLocked
	// lease: the kernel keeps a flock until its last descriptor closes).
	// Its validity has no end in time, so slow or failing renewals are
	// logged and never stop the command; only the engine's answer that
	// the lease is gone (a break) does.
	HeldWhileAlive bool
}

// forever is the validity of a lease held while its holder lives: far
// enough that no timer reaches it, near enough not to overflow.
const forever = 100 * 365 * 24 * time.Hour

const (
	// Drift (ρ) allows for the engine's clock running faster than ours:
	// lock.ClockDrift, by which the engines' doctor checks judge clocks.
	Drift = lock.ClockDrift
	// Delta (δ) covers the time from our SIGKILL to the child being gone:
	// lock.ValidityDelta, which Redlock's validity counts with too.
	Delta = lock.ValidityDelta
)

// ValidUntil is the last moment the lease is certainly valid, counting from
// s, the moment just before the granting request was sent.
func (t Timing) ValidUntil(s time.Time) time.Time {
	if t.HeldWhileAlive {
		return s.Add(forever)
	}
	return s.Add(time.Duration(float64(t.TTL)*(1-Drift)) - Delta)
}

// TermAt is when the child's group gets SIGTERM if renewal keeps failing:
// kill-grace before validUntil, brought forward as far as the SIGKILL is
// by late (see Lead), so that the command keeps its whole grace; never
// after KillAt (a kill-grace shorter than the lead).
func (t Timing) TermAt(validUntil time.Time, late time.Duration) time.Time {
	at := validUntil.Add(-t.KillGrace - (t.Lead(late) - t.Lead(0)))
	return minTime(at, t.KillAt(validUntil, late))
}

// KillAt is when the child's group gets SIGKILL: Lead(late) before
// validUntil, late being how late this process's timers have fired of
// late (lateness.go).
func (t Timing) KillAt(validUntil time.Time, late time.Duration) time.Time {
	return validUntil.Add(-t.Lead(late))
}

const (
	// LateFactor (k): the SIGKILL's lead is at least k times the recent
	// lateness of our timers. One for the kill timer itself, which is as
	// late as the timers we watched; one for the time from the SIGKILL to
	// the group gone, which the same load stretches and which no timer
	// shows; one because a peak of some hundred samples is not the worst
	// case.
	LateFactor = 3
	// LateHalfLife: an observed lateness counts for half as much this
	// much later; load comes and goes in seconds, and a lead too long
	// costs nothing while renewals succeed.
	LateHalfLife = 10 * time.Second
)

// Lead is how long before validUntil the SIGKILL is due:
// max(δ, TTL/100, min(k·late, TTL/20)). δ alone was the first design; on
// a loaded 2-core machine we measured the gap between the kill timer's due
// time and the child being reaped at up to ~10ms, which ate half of a 2s
// lease's whole margin, so the lead grows with the TTL (20ms at 2s, 300ms
// at 30s); under heavier load (load averages 12-26) the kill timer fired
// tens of ms late, so it also grows with the lateness this process saw,
// k = LateFactor times it. That part is capped at TTL/20 (100ms at 2s):
// TermAt moves with it, and with the longest kill-grace (TTL/2) that still
// leaves the first renewal (due at TTL/3) some 0.11·TTL to succeed; and
// with the default kill-grace a lease with a timer 5% of its TTL late has
// bigger troubles than its kill.
func (t Timing) Lead(late time.Duration) time.Duration {
	base := max(Delta, t.TTL/100)
	return max(base, min(LateFactor*min(max(late, 0), t.TTL), t.TTL/20))
}

// Interval is the time between renewals.
func (t Timing) Interval() time.Duration { return t.TTL / 3 }

// AttemptTimeout bounds one renew request, so that a stuck one leaves room
// for retries before TermAt.
func (t Timing) AttemptTimeout() time.Duration { return max(t.TTL/5, 50*time.Millisecond) }

// Backoff is the delay before retry n (1, 2, ...) after a failed renew:
// TTL/50 doubling, at most TTL/10.
func (t Timing) Backoff(n int) time.Duration {
	d := t.TTL / 50
	for i := 1; i < n && d < t.TTL/10; i++ {
		d *= 2
	}
	return min(d, t.TTL/10)
}

// DefaultKillGrace is min(10s, ttl/3).
func DefaultKillGrace(ttl time.Duration) time.Duration { return min(10*time.Second, ttl/3) }

// LostGrace is the most a command gets between SIGTERM and SIGKILL once the
// engine has answered that the lease is no longer ours: another holder may
// be running already, so the command must not run on for --kill-grace.
// It leaves a command that handles SIGTERM promptly the moment to exit by
// itself (and say so); --kill-grace, if shorter, wins.
const LostGrace = 100 * time.Millisecond

// LostKillAt is when the group gets SIGKILL after the engine answered, at
// now, that the lease is no longer ours: LostGrace (or kill-grace, if
// shorter) from now, and never after the lease's own KillAt.
func (t Timing) LostKillAt(now, validUntil time.Time, late time.Duration) time.Time {
	return minTime(now.Add(min(t.KillGrace, LostGrace)), t.KillAt(validUntil, late))
}

const (
	// SuspendTolerance: a growth of the machine's suspended time up to
	// this is taken for the jitter of reading two clocks, not a suspend.
	SuspendTolerance = 10 * time.Millisecond
	// SuspendAllowance is added to a measured suspend: a kernel whose
	// clock source stops while suspended counts the time with the
	// real-time clock, to the second.
	SuspendAllowance = time.Second
)

// AfterSuspend is validUntil (a monotonic time) once the machine has been
// suspended for d since validUntil was reckoned: the monotonic clock
// missed d, the engine's TTL did not, so the lease ends d (plus
// SuspendAllowance) sooner than the monotonic clock would say. A d within
// SuspendTolerance changes nothing.
func (t Timing) AfterSuspend(validUntil time.Time, d time.Duration) time.Time {
	if d <= SuspendTolerance {
		return validUntil
	}
	return validUntil.Add(-d - SuspendAllowance)
}

// SuspendCheck is how often the keeper looks for a suspend, so that after a
// resume it acts within this much: TTL/30, between 20ms and 250ms.
func (t Timing) SuspendCheck() time.Duration {
	return min(max(t.TTL/30, 20*time.Millisecond), 250*time.Millisecond)
}
