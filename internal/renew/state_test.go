package renew

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// The keeper's state driven one event at a time, on a fake clock: the test
// says what time it is, how long the machine has been suspended, which
// timer fired and what each renewal answered, and checks what the state
// asked for (renewals sent, timers armed, losses reported).

// stateHarness is the state's world: its fake clock and its recorded
// effects.
type stateHarness struct {
	t       *testing.T
	granted time.Time
	now     time.Time
	clock   *fakeClock
	s       *keeperState

	sent    []sentRenewal
	renewAt time.Time // when the renewal timer was last armed to fire
	termAt  time.Time // when the term timer was last armed to fire
	losses  []Loss
}

type sentRenewal struct {
	sent, deadline time.Time
	suspended      time.Duration
}

func newStateHarness(t *testing.T, tm Timing) *stateHarness {
	h := &stateHarness{t: t, granted: time.Unix(1_000_000, 0), clock: &fakeClock{}}
	h.now = h.granted
	h.s = newKeeperState(tm, "k", h.granted, 0, h.clock, func() time.Time { return h.now }, slog.New(slog.DiscardHandler), h)
	h.renewAt, h.termAt = h.granted.Add(tm.Interval()), h.s.termAt() // as the loop arms them
	return h
}

func (h *stateHarness) renew(sent time.Time, suspended time.Duration, deadline time.Time) {
	h.sent = append(h.sent, sentRenewal{sent: sent, deadline: deadline, suspended: suspended})
}
func (h *stateHarness) renewIn(d time.Duration) { h.renewAt = h.now.Add(d) }
func (h *stateHarness) termIn(d time.Duration)  { h.termAt = h.now.Add(d) }
func (h *stateHarness) report(l Loss)           { h.losses = append(h.losses, l) }

// at sets the fake clock to granted+d.
func (h *stateHarness) at(d time.Duration) { h.now = h.granted.Add(d) }

// answer answers the last renewal sent with err.
func (h *stateHarness) answer(err error) (lost bool) {
	h.t.Helper()
	if len(h.sent) == 0 || !h.s.inflight {
		h.t.Fatal("no renewal in flight to answer")
	}
	r := h.sent[len(h.sent)-1]
	return h.s.onResult(result{sent: r.sent, suspended: r.suspended, err: err})
}

func (h *stateHarness) noLoss() {
	h.t.Helper()
	if len(h.losses) > 0 {
		h.t.Fatalf("lost: %v", h.losses[0].Err)
	}
}

var errBlip = errors.New("connection reset")

// A good renewal counts validity from when it was sent, not from when it
// was answered, however late the answer; the next renewal is due an
// interval after the send.
func TestStateRenewalCountsFromTheSend(t *testing.T) {
	tm := Timing{TTL: 3 * time.Second, KillGrace: time.Second}
	h := newStateHarness(t, tm)
	h.at(time.Second)
	if h.s.onRenewDue() || len(h.sent) != 1 {
		t.Fatalf("renewal due: sent %d renewals, losses %v", len(h.sent), h.losses)
	}
	sent := h.granted.Add(time.Second)
	if r := h.sent[0]; !r.sent.Equal(sent) || !r.deadline.Equal(sent.Add(tm.AttemptTimeout())) {
		t.Errorf("renewal sent at %v with deadline %v, want at %v bounded by AttemptTimeout", r.sent, r.deadline, sent)
	}
	h.at(1500 * time.Millisecond) // answered 500ms later
	if h.answer(nil) {
		t.Fatal("a good renewal lost the lease")
	}
	if want := tm.ValidUntil(sent); !h.s.validUntil.Equal(want) {
		t.Errorf("validUntil = send%+v, want send%+v (counted from the send)", h.s.validUntil.Sub(sent), want.Sub(sent))
	}
	if want := tm.TermAt(tm.ValidUntil(sent), 0); !h.termAt.Equal(want) {
		t.Errorf("term timer armed for %v after the send, want %v", h.termAt.Sub(sent), want.Sub(sent))
	}
	if want := sent.Add(tm.Interval()); !h.renewAt.Equal(want) {
		t.Errorf("next renewal due %v after the send, want %v", h.renewAt.Sub(sent), tm.Interval())
	}
	// A renewal is never sent past validUntil: near the end of the lease
	// its deadline is validUntil, not a whole AttemptTimeout.
	h.now = h.s.validUntil.Add(-100 * time.Millisecond)
	h.s.onPoke()
	if r := h.sent[len(h.sent)-1]; !r.deadline.Equal(h.s.validUntil) {
		t.Errorf("a renewal 100ms before validUntil has deadline validUntil%+v", r.deadline.Sub(h.s.validUntil))
	}
}

// Failed renewals are retried with backoff TTL/50 doubling to TTL/10; the
// loss comes when the term timer reaches validUntil − kill_grace (not a
// moment sooner), with the SIGKILL due at KillAt and the last error named.
func TestStateFailuresBackOffThenLoseAtTermTime(t *testing.T) {
	tm := Timing{TTL: 6 * time.Second, KillGrace: time.Second}
	h := newStateHarness(t, tm)
	validUntil := h.s.validUntil
	h.at(tm.Interval())
	h.s.onRenewDue()
	want := []time.Duration{120, 240, 480, 600, 600} // ms: TTL/50 doubling, at most TTL/10
	for i, w := range want {
		h.now = h.now.Add(10 * time.Millisecond)
		if h.answer(errBlip) {
			t.Fatalf("failure %d lost the lease before its term time", i+1)
		}
		if got := h.renewAt.Sub(h.now); got != w*time.Millisecond {
			t.Errorf("retry %d due in %v, want %v", i+1, got, w*time.Millisecond)
		}
		h.now = h.renewAt
		h.s.onRenewDue()
	}
	if !h.s.validUntil.Equal(validUntil) || !h.termAt.Equal(tm.TermAt(validUntil, 0)) {
		t.Fatalf("failed renewals moved validity (%v) or the term timer (%v)", h.s.validUntil.Sub(validUntil), h.termAt.Sub(tm.TermAt(validUntil, 0)))
	}
	h.answer(errBlip)
	// The term timer firing early (a timer may) re-arms for the rest.
	h.now = tm.TermAt(validUntil, 0).Add(-time.Millisecond)
	if h.s.onTermDue() {
		t.Fatal("lost 1ms before the term time")
	}
	if !h.termAt.Equal(tm.TermAt(validUntil, 0)) {
		t.Errorf("term timer re-armed for %v, want the term time", h.termAt.Sub(tm.TermAt(validUntil, 0)))
	}
	h.noLoss()
	h.now = tm.TermAt(validUntil, 0)
	if !h.s.onTermDue() || len(h.losses) != 1 {
		t.Fatalf("term time reached: lost=%d", len(h.losses))
	}
	if l := h.losses[0]; !l.KillAt.Equal(tm.KillAt(validUntil, 0)) || !strings.Contains(l.Err.Error(), errBlip.Error()) {
		t.Errorf("loss %q with KillAt validUntil%+v, want KillAt validUntil-%v and the last error", l.Err, l.KillAt.Sub(validUntil), max(Delta, tm.TTL/100))
	}
}

// "Not yours" is a loss at once, whatever validity is left, with the
// SIGKILL LostGrace from now (or at KillAt, if that is sooner).
func TestStateNotYoursLosesAtOnce(t *testing.T) {
	tm := Timing{TTL: 30 * time.Second, KillGrace: 5 * time.Second}
	h := newStateHarness(t, tm)
	h.at(500 * time.Millisecond)
	h.s.onPoke()
	h.at(600 * time.Millisecond)
	if !h.answer(lock.ErrNotHeld) || len(h.losses) != 1 {
		t.Fatal("not yours did not lose the lease")
	}
	if got := h.losses[0].KillAt.Sub(h.now); got != LostGrace {
		t.Errorf("KillAt now+%v, want now+%v", got, LostGrace)
	}
	// Near the end of the lease, KillAt is the lease's own.
	h = newStateHarness(t, tm)
	h.now = tm.KillAt(h.s.validUntil, 0).Add(-10 * time.Millisecond)
	h.s.onPoke()
	h.answer(lock.ErrNotHeld)
	if got := h.losses[0].KillAt; !got.Equal(tm.KillAt(h.s.validUntil, 0)) {
		t.Errorf("KillAt validUntil%+v, want the lease's KillAt", got.Sub(h.s.validUntil))
	}
}

// A suspend shortens validity by its length plus SuspendAllowance and sends
// a renewal at once; one longer than the margin is a loss at once, with
// the SIGKILL already due. A reading within SuspendTolerance changes
// nothing.
func TestStateSuspendShortensValidity(t *testing.T) {
	tm := Timing{TTL: 10 * time.Second, KillGrace: time.Second}
	h := newStateHarness(t, tm)
	validUntil := h.s.validUntil
	h.at(100 * time.Millisecond)
	h.clock.suspend(SuspendTolerance)
	if h.s.onSuspendCheck() || len(h.sent) != 0 || !h.s.validUntil.Equal(validUntil) {
		t.Fatalf("a jitter of %v counted as a suspend", SuspendTolerance)
	}
	h.clock.suspend(200 * time.Millisecond) // 210ms since validity was reckoned
	if h.s.onSuspendCheck() {
		t.Fatal("a short suspend lost the lease")
	}
	if got := validUntil.Sub(h.s.validUntil); got != 200*time.Millisecond+SuspendTolerance+SuspendAllowance {
		t.Errorf("validity shortened by %v", got)
	}
	if len(h.sent) != 1 || !h.termAt.Equal(tm.TermAt(h.s.validUntil, 0)) {
		t.Fatalf("after a suspend: %d renewals sent, term timer at validUntil%+v", len(h.sent), h.termAt.Sub(h.s.validUntil))
	}
	// That renewal is answered after a second suspend: its validity runs
	// from its send, less the suspend since.
	h.clock.suspend(300 * time.Millisecond)
	h.at(200 * time.Millisecond)
	sent := h.sent[0]
	h.s.onResult(result{sent: sent.sent, suspended: sent.suspended})
	h.noLoss()
	if want := tm.AfterSuspend(tm.ValidUntil(sent.sent), 300*time.Millisecond); !h.s.validUntil.Equal(want) {
		t.Errorf("validUntil %v off a renewal answered after a suspend", h.s.validUntil.Sub(want))
	}
	// A suspend past the term time: lost at once, the reason counting
	// every suspend since the last good renewal was sent.
	h.clock.suspend(9 * time.Second)
	if !h.s.onRenewDue() || len(h.losses) != 1 {
		t.Fatal("a 9s suspend of a 10s lease was not a loss at once")
	}
	if l := h.losses[0]; l.KillAt.After(h.now) || !strings.Contains(l.Err.Error(), "suspended for 9.3s") {
		t.Errorf("loss %q with KillAt now+%v, want now at the latest", l.Err, l.KillAt.Sub(h.now))
	}
}

// Confirm is answered only by a renewal sent after it asked: one in flight
// when it asked does not count, and a new one is sent when it returns.
// A failed renewal leaves it waiting; the end of the keeper answers it
// with an error.
func TestStateConfirmNeedsARenewalSentAfterIt(t *testing.T) {
	tm := Timing{TTL: 3 * time.Second, KillGrace: time.Second}
	h := newStateHarness(t, tm)
	h.at(100 * time.Millisecond)
	h.s.onPoke() // renewal A
	h.at(200 * time.Millisecond)
	ch := make(chan error, 1)
	h.s.onConfirm(ch)
	if len(h.sent) != 1 {
		t.Fatalf("Confirm while a renewal is in flight sent another at once (%d sent)", len(h.sent))
	}
	h.at(300 * time.Millisecond)
	h.answer(nil) // A, sent before the Confirm
	select {
	case err := <-ch:
		t.Fatalf("Confirm answered (%v) by a renewal sent before it", err)
	default:
	}
	if len(h.sent) != 2 || !h.sent[1].sent.Equal(h.now) {
		t.Fatalf("no renewal sent for the Confirm after the older one returned (%d sent)", len(h.sent))
	}
	h.at(400 * time.Millisecond)
	h.answer(errBlip) // B failed: retried as usual, Confirm waits on
	if len(ch) != 0 {
		t.Fatal("Confirm answered by a failed renewal")
	}
	h.now = h.renewAt
	h.s.onRenewDue() // C
	h.answer(nil)
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("Confirm answered %v by a good renewal", err)
		}
	default:
		t.Fatal("Confirm not answered by a good renewal sent after it")
	}
	// With no renewal in flight, Confirm sends one; the keeper's end
	// answers it with an error.
	h.s.onConfirm(ch)
	if !h.s.inflight {
		t.Fatal("Confirm with nothing in flight sent no renewal")
	}
	h.s.stopped()
	if err := <-ch; !errors.Is(err, errStopped) {
		t.Fatalf("Confirm at the keeper's end answered %v", err)
	}
}

// A lease held while distlock lives is never lost for slowness: renewals
// failing for ten TTLs, and the term timer firing, report nothing. Only
// "not yours" ends it.
func TestStateHeldWhileAliveNeverLosesOnSlowness(t *testing.T) {
	tm := Timing{TTL: 600 * time.Millisecond, KillGrace: 200 * time.Millisecond, HeldWhileAlive: true}
	h := newStateHarness(t, tm)
	h.at(tm.Interval())
	h.s.onRenewDue()
	for h.now.Before(h.granted.Add(10 * tm.TTL)) {
		h.now = h.sent[len(h.sent)-1].deadline // each attempt times out
		if h.answer(context.DeadlineExceeded) {
			t.Fatalf("lost after %v of failed renewals", h.now.Sub(h.granted))
		}
		if h.s.onTermDue() {
			t.Fatalf("term time reached after %v", h.now.Sub(h.granted))
		}
		h.now = h.renewAt
		h.s.onRenewDue()
	}
	h.noLoss()
	if !h.answer(lock.ErrNotHeld) {
		t.Fatal("not yours did not end a lease held while alive")
	}
}
