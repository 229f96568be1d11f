package sqlstore

import (
	"database/sql"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func TestHolderFromRow(t *testing.T) {
	if _, ok := (&holderRow{}).holder("k"); ok {
		t.Error("a row of NULLs made a holder")
	}
	str := func(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
	num := func(n int64) sql.NullInt64 { return sql.NullInt64{Int64: n, Valid: true} }
	at := time.UnixMicro(1893553445000006)
	r := slotRow{key: "k", limit: 3, slot: 2, hr: holderRow{
		owner: str("o"), host: str("h"), user: str("u"), command: str("c"), note: str("n"), hold: str("min-hold"),
		token: num(7), pid: num(42), ttlMs: num(3000), expiresMs: num(1500), acquiredUs: num(at.UnixMicro()),
	}}
	h, ok := r.holder("k")
	want := lock.Holder{Key: "k", Owner: "o", Token: 7, Hold: "min-hold", AcquiredAt: at, TTL: 3 * time.Second,
		ExpiresIn: 1500 * time.Millisecond, Limit: 3, Slot: 2,
		Meta: lock.Meta{Host: "h", PID: 42, User: "u", Command: "c", Note: "n"}}
	if !ok || h != want {
		t.Errorf("holder = %+v, %v; want %+v", h, ok, want)
	}
	// Expired by the time the row was read: the time left is unknown (-1);
	// a mutex (limit 1) is not marked with a slot.
	r.hr.expiresMs, r.limit, r.slot = num(-5), 1, 0
	if h, _ := r.holder("k"); h.ExpiresIn != -1 || h.Limit != 0 || h.Slot != 0 {
		t.Errorf("expired mutex holder = %+v; want ExpiresIn -1, no limit or slot", h)
	}
}
