package lock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// offLine is a store whose place stands off the line: Look answers look,
// Take answers ErrLookAgain again times, then a lease.
type offLine struct {
	look          LineLook
	again         int
	looks, leaves int
}

func (o *offLine) Join(context.Context) error             { return errors.New("an off-line try joins nothing") }
func (o *offLine) Look(context.Context) (LineLook, error) { o.looks++; return o.look, nil }
func (o *offLine) Watch(context.Context) (Retry, error)   { return Retry{}, errors.New("no watch") }
func (o *offLine) Leave()                                 { o.leaves++ }
func (o *offLine) Take(context.Context) (Lease, error) {
	if o.again > 0 {
		o.again--
		return nil, ErrLookAgain
	}
	return NewLease(Grant{Key: "k", Owner: "me"}, nil), nil
}

func TestTryOffLine(t *testing.T) {
	ctx := context.Background()
	h := Holder{Key: "k", Owner: "h", Token: 3}
	for _, look := range []LineLook{{Ahead: 1, Free: 1}, {Free: 0, Holder: h}} {
		o := &offLine{look: look}
		var busy *BusyError
		if _, err := TryOffLine(ctx, o); !errors.As(err, &busy) || busy.Holder != look.Holder || o.leaves != 1 {
			t.Errorf("look %+v: %v, %d leaves; want busy naming %+v, one leave", look, err, o.leaves, look.Holder)
		}
	}
	o := &offLine{look: LineLook{Free: 1}, again: 3}
	if l, err := TryOffLine(ctx, o); err != nil || l == nil || o.looks != 4 || o.leaves != 0 {
		t.Errorf("a free place taken after 3 conflicts: %v (%d looks, %d leaves), want the lease after 4 looks, no leave", err, o.looks, o.leaves)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	o = &offLine{look: LineLook{Free: 1}, again: 1 << 30}
	if _, err := TryOffLine(cctx, o); !errors.Is(err, context.DeadlineExceeded) || o.leaves != 1 {
		t.Errorf("conflicts until ctx ends: %v, %d leaves; want ctx's error, one leave", err, o.leaves)
	}
}
