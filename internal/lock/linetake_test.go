package lock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// renewals answers each renewal from errs in turn (nil once they run
// out), noting when each was sent.
type renewals struct {
	errs []error
	sent []time.Time
}

func (r *renewals) renew(context.Context) error {
	r.sent = append(r.sent, time.Now())
	if len(r.sent) > len(r.errs) {
		return nil
	}
	return r.errs[len(r.sent)-1]
}

func TestTakeRenewed(t *testing.T) {
	lost, refused := errors.New("lost"), errors.New("refused")
	cases := []struct {
		name     string
		renews   []error
		take     error
		want     error
		renewals int
		fromLast bool // granted is just before the last renewal, after the one before
	}{
		{"both answer", nil, nil, nil, 1, false},
		{"renewal lost, then confirmed", []error{lost, lost}, nil, nil, 3, true},
		{"place gone", []error{ErrNotHeld}, nil, ErrNotHeld, 1, false},
		{"place gone, take failed", []error{ErrNotHeld}, refused, ErrNotHeld, 1, false},
		{"take failed", nil, refused, refused, 1, false},
		{"take failed, renewal lost: no confirmation", []error{lost}, refused, refused, 1, false},
		{"gone on confirmation", []error{lost, ErrNotHeld}, nil, ErrNotHeld, 2, true},
	}
	for _, c := range cases {
		r := &renewals{errs: c.renews}
		var took time.Time
		start := time.Now()
		granted, err := TakeRenewed(context.Background(), time.Minute, r.renew, func(context.Context) error {
			took = time.Now()
			return c.take
		})
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if len(r.sent) != c.renewals {
			t.Errorf("%s: %d renewals, want %d", c.name, len(r.sent), c.renewals)
			continue
		}
		if c.want != nil {
			continue
		}
		lo, hi := start, took
		if c.fromLast {
			lo, hi = r.sent[len(r.sent)-2], r.sent[len(r.sent)-1]
		}
		if granted.Before(lo) || granted.After(hi) {
			t.Errorf("%s: granted %v, want between %v and %v", c.name, granted, lo, hi)
		}
	}
}

// A renewal that keeps failing stops when ctx ends, with its error.
func TestTakeRenewedGivesUpWithCtx(t *testing.T) {
	lost := errors.New("lost")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := TakeRenewed(ctx, time.Minute, func(context.Context) error {
		if n++; n == 3 {
			cancel()
		}
		return lost
	}, func(context.Context) error { return nil })
	if !errors.Is(err, lost) || n != 3 {
		t.Fatalf("err %v after %d renewals, want %v after 3", err, n, lost)
	}
}

// A renewal that hangs (a paused engine, dropped traffic) is given up ttl
// after it went out, and the next one goes out: the take answers once one
// does, counting from just before it. The take's context has no end (as
// with --wait forever): without the bound a hung renewal blocks the take
// for good.
func TestTakeRenewedGivesUpAHungRenewal(t *testing.T) {
	const ttl = 100 * time.Millisecond
	for _, hung := range []int{1, 3} { // the first renewal (alongside the take), or it and two confirming ones
		type answer struct {
			granted time.Time
			err     error
		}
		var sent, ended []time.Time
		done := make(chan answer, 1)
		go func() {
			g, err := TakeRenewed(context.Background(), ttl, func(ctx context.Context) error {
				sent = append(sent, time.Now())
				if len(sent) > hung {
					return nil
				}
				<-ctx.Done()
				ended = append(ended, time.Now())
				return ctx.Err()
			}, func(context.Context) error { return nil })
			done <- answer{g, err}
		}()
		select {
		case a := <-done:
			if a.err != nil {
				t.Fatalf("%d hung: err %v, want the lease", hung, a.err)
			}
			if len(sent) != hung+1 {
				t.Fatalf("%d hung: %d renewals, want %d", hung, len(sent), hung+1)
			}
			for i, e := range ended {
				if e.Sub(sent[i]) < ttl {
					t.Errorf("%d hung: renewal %d given up after %v, before the ttl %v", hung, i, e.Sub(sent[i]), ttl)
				}
			}
			if last := sent[hung]; a.granted.Before(ended[hung-1]) || a.granted.After(last) {
				t.Errorf("%d hung: granted %v, want just before the renewal that answered (%v)", hung, a.granted, last)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d hung: the take still blocks 10s after a renewal hung (ttl %v)", hung, ttl)
		}
	}
}
