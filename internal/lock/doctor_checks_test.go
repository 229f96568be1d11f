package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCannotCheck(t *testing.T) {
	c := CannotCheck("clock", "read the server's clock (TIME)", errors.New("NOPERM no rights\nserver detail"), "ask for rights")
	want := Check{Name: "clock", Status: CheckWarning, Detail: "cannot read the server's clock (TIME): NOPERM no rights", Fix: "ask for rights"}
	if c != want {
		t.Errorf("CannotCheck = %+v, want %+v", c, want)
	}
}

func TestWorstCheck(t *testing.T) {
	ok, warn, warn2, bad := Check{Name: "a", Status: CheckOK}, Check{Name: "b", Status: CheckWarning}, Check{Name: "c", Status: CheckWarning}, Check{Name: "d", Status: CheckProblem}
	for _, tc := range []struct {
		in   []Check
		want string
	}{
		{[]Check{ok}, "a"},
		{[]Check{ok, warn, warn2}, "b"},
		{[]Check{warn, ok}, "b"},
		{[]Check{warn, bad, warn2}, "d"},
		{[]Check{bad, warn, ok}, "d"},
	} {
		if got := WorstCheck(tc.in); got.Name != tc.want {
			t.Errorf("WorstCheck(%v) = %s, want %s", tc.in, got.Name, tc.want)
		}
	}
	if Worse(CheckOK, CheckOK) != CheckOK || Worse(CheckProblem, CheckWarning) != CheckProblem || Worse(CheckWarning, CheckOK) != CheckWarning {
		t.Error("Worse does not keep the worse status")
	}
}

func TestOffset(t *testing.T) {
	if got := Offset(10*time.Millisecond, time.Millisecond); got != "10ms (±1ms) ahead of" {
		t.Errorf("Offset(10ms) = %q", got)
	}
	if got := Offset(-5*time.Second, 1500*time.Microsecond); got != "5s (±1.5ms) behind" {
		t.Errorf("Offset(-5s) = %q", got)
	}
}

// TestServerClockCheck: the engine's reading, the best of ClockReadings,
// judged as ClockOffsetCheck judges it; a failed read is a warning.
func TestServerClockCheck(t *testing.T) {
	rctx := DoctorRequest{Timeout: time.Second}.RequestContexts(context.Background(), time.Second)
	reads := 0
	at := func(ahead time.Duration) func(context.Context) (time.Time, error) {
		return func(context.Context) (time.Time, error) { reads++; return time.Now().Add(ahead), nil }
	}
	if c := ServerClockCheck(rctx, 100*time.Second, "TIME", 0, at(0)); c.Status != CheckOK || !strings.Contains(c.Detail, "TIME, best of 5 round trips") || reads != ClockReadings {
		t.Errorf("a clock in step: %+v after %d reads", c, reads)
	}
	if c := ServerClockCheck(rctx, 100*time.Second, "TIME", 0, at(5*time.Second)); c.Status != CheckWarning || !strings.Contains(c.Detail, "5s (±") {
		t.Errorf("a clock 5s ahead at --ttl 100s: %+v", c)
	}
	if c := ServerClockCheck(rctx, 100*time.Second, "mtime", 2*time.Second, at(0)); !strings.Contains(c.Detail, "(±2s)") {
		t.Errorf("the resolution is not in the uncertainty: %+v", c)
	}
	fail := func(context.Context) (time.Time, error) { return time.Time{}, errors.New("refused") }
	if c := ServerClockCheck(rctx, time.Minute, "TIME", 0, fail); c.Status != CheckWarning || c.Detail != "cannot read the server's clock (TIME): refused" {
		t.Errorf("an unreadable clock: %+v", c)
	}
}

// counter reads out values, one per read, then repeats the last.
func counter(values ...int64) func(context.Context) (int64, error) {
	return func(context.Context) (int64, error) {
		v := values[0]
		if len(values) > 1 {
			values = values[1:]
		}
		return v, nil
	}
}

// TestWaitTick: a tick is one step from one read to the next, bracketed
// by the read before it and the read that saw it; a jump of two steps is
// read past (the tick it skipped is not bracketed); no tick in time, a
// failed read and an ended context are errors.
func TestWaitTick(t *testing.T) {
	ctx := context.Background()
	before := time.Now()
	tk, err := WaitTick(ctx, time.Minute, 0, 1, counter(41, 41, 42))
	if err != nil || tk.V != 41 || tk.Lo.Before(before) || tk.Hi.Before(tk.Lo) || time.Now().Before(tk.Hi) {
		t.Errorf("41, 41, 42: %+v, %v", tk, err)
	}
	if tk.Half() != tk.Hi.Sub(tk.Lo)/2 || !tk.Mid().Equal(tk.Lo.Add(tk.Half())) {
		t.Errorf("Mid and Half of %+v: %s, %s", tk, tk.Mid(), tk.Half())
	}
	if tk, err = WaitTick(ctx, time.Minute, 0, -1, counter(9, 7, 7, 6)); err != nil || tk.V != 7 {
		t.Errorf("9, 7, 7, 6 counting down: %+v, %v, want the tick from 7", tk, err)
	}
	if _, err = WaitTick(ctx, 10*time.Millisecond, 0, 1, counter(5)); err == nil {
		t.Error("a counter that never moves gave a tick")
	}
	if _, err = WaitTick(ctx, 10*time.Millisecond, 0, 1, counter(5, 4, 3)); err == nil {
		t.Error("a counter moving the wrong way gave a tick")
	}
	refused := errors.New("refused")
	if _, err = WaitTick(ctx, time.Minute, 0, 1, func(context.Context) (int64, error) { return 0, refused }); !errors.Is(err, refused) {
		t.Errorf("a failed read: %v", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = WaitTick(ended, time.Minute, time.Hour, 1, counter(1, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("an ended context during the pause: %v", err)
	}
}

// TestGrantedTTLCheck: a grant shorter than --ttl is a problem, one longer
// than --ttl plus the slack a warning, anything between ok.
func TestGrantedTTLCheck(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		granted, slack time.Duration
		want           CheckStatus
		fix            string
	}{
		{10*s - 1, s, CheckProblem, "distlock refuses this --ttl here: go shorter"},
		{10 * s, s, CheckOK, ""},
		{11 * s, s, CheckOK, ""},
		{11*s + 1, s, CheckWarning, "a crashed holder's lock stays taken for 11.000000001s, not --ttl 10s"},
		{10*s + 1, 0, CheckWarning, "go longer"},
	} {
		c := GrantedTTLCheck("lease-ttl", "lease", 10*s, tc.granted, tc.slack, "whole seconds", "go shorter", "go longer")
		if c.Name != "lease-ttl" || c.Status != tc.want || !strings.Contains(c.Fix, tc.fix) || (c.Fix == "") != (tc.want == CheckOK) ||
			!strings.HasPrefix(c.Detail, "--ttl 10s: the server grants a lease of ") || !strings.HasSuffix(c.Detail, " (whole seconds)") {
			t.Errorf("granted %s, slack %s: %+v, want %s with fix %q", tc.granted, tc.slack, c, tc.want, tc.fix)
		}
	}
}

func TestFirstCase(t *testing.T) {
	cases := func(a, b bool) []Case {
		return []Case{{When: a, Status: CheckProblem, Detail: "a", Fix: "fix a"}, {When: b, Detail: "b"}}
	}
	otherwise := Case{Status: CheckWarning, Detail: "c", Fix: "fix c"}
	for _, tc := range []struct {
		a, b bool
		want Check
	}{
		{true, true, Check{Name: "n", Status: CheckProblem, Detail: "a", Fix: "fix a"}},
		{false, true, Check{Name: "n", Status: CheckOK, Detail: "b"}},
		{false, false, Check{Name: "n", Status: CheckWarning, Detail: "c", Fix: "fix c"}},
	} {
		if got := FirstCase("n", cases(tc.a, tc.b), otherwise); got != tc.want {
			t.Errorf("FirstCase(%v, %v) = %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
	if got := FirstCase("n", nil, Case{Detail: "fine"}); got != (Check{Name: "n", Status: CheckOK, Detail: "fine"}) {
		t.Errorf("no case, an ok otherwise: %+v", got)
	}
}
