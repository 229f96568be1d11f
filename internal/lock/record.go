package lock

import "time"

// Record is how a holder's record opens on the engines that keep one as
// JSON per contender (etcd, ZooKeeper): who asked, from where, since when,
// for how long. Each engine embeds it first in its own record and adds its
// own fields after it (the token, the hold, the slot, ...), so the JSON
// keeps the field order each engine has always written: distlock versions
// read each other's records, and status, list and break read them.
type Record struct {
	Owner   string `json:"owner"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	User    string `json:"user,omitempty"`
	Command string `json:"command,omitempty"` // argv[0] only
	Note    string `json:"note,omitempty"`
	// AcquiredAt is the wall clock when the contender became holder (or
	// joined the line, until a waiter becomes holder and restamps it).
	AcquiredAt time.Time `json:"acquired_at"`
	QueuedAt   time.Time `json:"queued_at,omitzero"`
	// TTLms is the TTL that was asked for.
	TTLms int64 `json:"ttl_ms"`
}

// NewRecord is req's record, for a contender that joins at now.
func NewRecord(req Request, now time.Time) Record {
	return Record{
		Owner: req.Owner, Host: req.Meta.Host, PID: req.Meta.PID, User: req.Meta.User,
		Command: req.Meta.Command, Note: req.Meta.Note,
		AcquiredAt: now, QueuedAt: now, TTLms: req.TTL.Milliseconds(),
	}
}

// Holder describes the holder r records, of key. Its time left is the
// engine's to tell: ExpiresIn is -1 (unknown) here.
func (r Record) Holder(key string) Holder {
	return Holder{
		Key:        key,
		Owner:      r.Owner,
		Meta:       Meta{Host: r.Host, PID: r.PID, User: r.User, Command: r.Command, Note: r.Note},
		AcquiredAt: r.AcquiredAt,
		TTL:        time.Duration(r.TTLms) * time.Millisecond,
		ExpiresIn:  -1,
	}
}
