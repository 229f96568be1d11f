package lock

import (
	"encoding/base64"
	"encoding/json"
	"time"
)

// Hold modes: why a lock is held with no distlock process renewing it.
const (
	HoldMinHold = "min-hold" // run --min-hold: kept after the command ended
	HoldHandle  = "handle"   // distlock acquire: held across CI steps
)

// Handle names a held lease: enough to extend or release it from another
// process. It holds no engine credentials.
type Handle struct {
	Key     string `json:"k"`
	Owner   string `json:"o"`
	Token   uint64 `json:"t"`
	TTLms   int64  `json:"ttl"`
	LeaseID int64  `json:"l,omitempty"` // etcd: the lease the key is attached to
}

// TTL is the handle's lease time-to-live.
func (h Handle) TTL() time.Duration { return time.Duration(h.TTLms) * time.Millisecond }

// Encode gives the handle as one shell-safe word (base64url of JSON).
func (h Handle) Encode() string {
	b, _ := json.Marshal(h) // plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseHandle reads an encoded handle.
func ParseHandle(s string) (Handle, error) {
	var h Handle
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil || h.Key == "" || h.Owner == "" || h.Token == 0 {
		return Handle{}, Invalidf("the handle is malformed: pass the DISTLOCK_HANDLE value printed by distlock acquire")
	}
	return h, nil
}
