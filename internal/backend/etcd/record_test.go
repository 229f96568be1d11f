package etcd

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// TestRecordBytes pins the JSON a contender's and a slot's value is written
// as, byte for byte: running distlock versions read each other's records,
// and status, list and break read them, so the field names and their order
// stay.
func TestRecordBytes(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	req := lock.Request{Key: "k", Owner: "o1", TTL: 30 * time.Second, Limit: 3,
		Meta: lock.Meta{Host: "h", PID: 42, User: "u", Command: "cmd", Note: "n"}}
	full := newRecord(req, at)
	full.Hold, full.Token = lock.HoldMinHold, 77
	const wantFull = `{"owner":"o1","host":"h","pid":42,"user":"u","command":"cmd","note":"n",` +
		`"acquired_at":"2024-05-06T07:08:09.123456789Z","queued_at":"2024-05-06T07:08:09.123456789Z",` +
		`"ttl_ms":30000,"hold":"min-hold","token":77}`
	if got := (slotRecord{record: full}).value(); got != wantFull {
		t.Errorf("full record:\n got %s\nwant %s", got, wantFull)
	}
	slot := slotRecord{record: full, Limit: 3, Slot: 0}
	wantSlot := wantFull[:len(wantFull)-1] + `,"limit":3,"slot":0}`
	if got := slot.value(); got != wantSlot {
		t.Errorf("slot record:\n got %s\nwant %s", got, wantSlot)
	}
	bare := newRecord(lock.Request{Owner: "o2", TTL: time.Second}, time.Time{})
	const wantBare = `{"owner":"o2","acquired_at":"0001-01-01T00:00:00Z","ttl_ms":1000}`
	if got := (slotRecord{record: bare}).value(); got != wantBare {
		t.Errorf("bare record:\n got %s\nwant %s", got, wantBare)
	}
}

// newRecord is a contender's record for req, as Join and a try-once write
// it.
func newRecord(req lock.Request, now time.Time) record {
	return record{Record: lock.NewRecord(req, now)}
}

// encodeJSON is v as JSON, for records written as another build would.
func encodeJSON(v any) string {
	b, _ := json.Marshal(v) // plain fields: cannot fail
	return string(b)
}
