package sqlstore

import (
	"database/sql"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// holderRow scans the holder columns (Queries): owner, token, host, pid,
// username, command, note, acquired (µs since 1970), ttl_ms, hold,
// expires_in_ms. They are NULL when no holder was joined.
type holderRow struct {
	owner, host, user, command, note, hold   sql.NullString
	token, pid, acquiredUs, ttlMs, expiresMs sql.NullInt64
}

func (r *holderRow) dest() []any {
	return []any{&r.owner, &r.token, &r.host, &r.pid, &r.user, &r.command, &r.note, &r.acquiredUs, &r.ttlMs, &r.hold, &r.expiresMs}
}

// holder builds the Holder; ok is false when the columns were NULL.
func (r *holderRow) holder(key string) (lock.Holder, bool) {
	if !r.owner.Valid || !r.token.Valid {
		return lock.Holder{}, false
	}
	h := lock.Holder{Key: key, Owner: r.owner.String, Token: uint64(r.token.Int64), ExpiresIn: -1, Hold: r.hold.String,
		Meta: lock.Meta{Host: r.host.String, PID: int(r.pid.Int64), User: r.user.String, Command: r.command.String, Note: r.note.String}}
	if r.acquiredUs.Valid {
		h.AcquiredAt = time.UnixMicro(r.acquiredUs.Int64)
	}
	if r.ttlMs.Valid {
		h.TTL = time.Duration(r.ttlMs.Int64) * time.Millisecond
	}
	if r.expiresMs.Valid && r.expiresMs.Int64 >= 0 {
		h.ExpiresIn = time.Duration(r.expiresMs.Int64) * time.Millisecond
	}
	return h, true
}

// slotRow is a row of Leases, List and Break: the key, the holder
// columns, the limit and the slot.
type slotRow struct {
	key         string
	hr          holderRow
	limit, slot int
}

func (r *slotRow) dest() []any {
	return append(append([]any{&r.key}, r.hr.dest()...), &r.limit, &r.slot)
}

// holder is the row's Holder for key, marked with its limit and slot when
// it is a semaphore's.
func (r *slotRow) holder(key string) (lock.Holder, bool) {
	h, ok := r.hr.holder(key)
	if r.limit > 1 {
		h.Limit, h.Slot = r.limit, r.slot
	}
	return h, ok
}
