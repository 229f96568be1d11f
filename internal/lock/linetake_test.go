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
		granted, err := TakeRenewed(context.Background(), r.renew, func(context.Context) error {
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
	_, err := TakeRenewed(ctx, func(context.Context) error {
		if n++; n == 3 {
			cancel()
		}
		return lost
	}, func(context.Context) error { return nil })
	if !errors.Is(err, lost) || n != 3 {
		t.Fatalf("err %v after %d renewals, want %v after 3", err, n, lost)
	}
}
