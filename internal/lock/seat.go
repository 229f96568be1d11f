package lock

import "time"

// Seat is what a holder's record says beyond its Record on the engines
// that keep one per contender (etcd, Consul, ZooKeeper), each under its
// own field names and order: its token (0 for a contender that has not
// taken over yet), the hold it is kept by (none: a process renews it),
// the limit it asked for and its slot, and when its hold ends where the
// record tells (zero: not a hold, or the engine asks the server).
type Seat struct {
	Token   uint64
	Hold    string
	Limit   int
	Slot    int
	HoldEnd time.Time
}

// Describe describes the holder of key that r and s record, by the clock
// now: a semaphore's holder (limit > 1) with its limit and slot, a
// mutex's with neither; a hold with an end, with the time left until
// then (0 once past, never less); else ExpiresIn -1, for the engine to
// tell if it can.
func (r Record) Describe(key string, s Seat, now time.Time) Holder {
	h := r.Holder(key)
	h.Token, h.Hold = s.Token, s.Hold
	if !s.HoldEnd.IsZero() {
		h.ExpiresIn = max(s.HoldEnd.Sub(now), 0)
	}
	if s.Limit > 1 {
		h.Limit, h.Slot = s.Limit, s.Slot
	}
	return h
}
