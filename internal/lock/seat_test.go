package lock

import (
	"testing"
	"time"
)

func TestRecordDescribe(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC) // a fake clock: Describe reads no other
	r := Record{Owner: "o", AcquiredAt: now.Add(-time.Minute), TTLms: 30000}
	base := r.Holder("k")
	with := func(f func(*Holder)) Holder { h := base; f(&h); return h }
	for _, c := range []struct {
		name string
		seat Seat
		want Holder
	}{
		{"a contender not taken over yet: token 0, time left unknown", Seat{}, base},
		{"a mutex's holder shows no limit nor slot", Seat{Token: 9, Limit: 1, Slot: 0},
			with(func(h *Holder) { h.Token = 9 })},
		{"a semaphore's holder shows its limit and slot", Seat{Token: 9, Limit: 3, Slot: 2},
			with(func(h *Holder) { h.Token, h.Limit, h.Slot = 9, 3, 2 })},
		{"a hold with an end: the time left until it", Seat{Token: 9, Hold: "held", HoldEnd: now.Add(1500 * time.Millisecond)},
			with(func(h *Holder) { h.Token, h.Hold, h.ExpiresIn = 9, "held", 1500*time.Millisecond })},
		{"a hold past its end: 0 left, never less", Seat{Hold: "held", HoldEnd: now.Add(-time.Second)},
			with(func(h *Holder) { h.Hold, h.ExpiresIn = "held", 0 })},
		{"a hold whose end the engine asks: unknown", Seat{Hold: "held"},
			with(func(h *Holder) { h.Hold = "held" })},
	} {
		if got := r.Describe("k", c.seat, now); got != c.want {
			t.Errorf("%s: Describe = %+v, want %+v", c.name, got, c.want)
		}
	}
}
