package lock

import (
	"testing"
	"time"
)

func TestRecordHolder(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	req := Request{Key: "k", Owner: "o", TTL: 1500 * time.Millisecond,
		Meta: Meta{Host: "h", PID: 7, User: "u", Command: "c", Note: "n"}}
	r := NewRecord(req, at)
	if r.QueuedAt != at || r.AcquiredAt != at || r.TTLms != 1500 {
		t.Fatalf("NewRecord = %+v", r)
	}
	h := r.Holder("k")
	want := Holder{Key: "k", Owner: "o", Meta: req.Meta, AcquiredAt: at, TTL: 1500 * time.Millisecond, ExpiresIn: -1}
	if h != want {
		t.Fatalf("Holder = %+v, want %+v", h, want)
	}
}
