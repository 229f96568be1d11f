package zookeeper

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// record is the JSON data of a contender's (or a hold's) node: the
// holder's lock.Record, then ZooKeeper's own fields: the session timeout
// granted (>= TTLms); the token, set when the contender became holder (0
// while it waits); a hold node's mode, length from its mtime and node TTL.
type record struct {
	lock.Record
	SessionMs int64  `json:"session_ms,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Slot      int    `json:"slot,omitempty"`
	Hold      string `json:"hold,omitempty"`
	HoldMs    int64  `json:"hold_ms,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	NodeTTL   int64  `json:"node_ttl_ms,omitempty"`
}

func newRecord(req lock.Request, now time.Time) record {
	return record{Record: lock.NewRecord(req, now), Limit: limitOf(req)}
}

func (r record) encode() []byte {
	b, _ := json.Marshal(r) // plain fields: cannot fail
	return b
}

func decodeRecord(b []byte) record {
	var r record
	_ = json.Unmarshal(b, &r) // a foreign or broken node describes no one
	return r
}

func limitOf(req lock.Request) int { return max(req.Limit, 1) }

func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
