package lock

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
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
	// Where the lock lives, set by distlock acquire (empty in a handle
	// from a build before it): the engine as backend.Locate names it (a
	// URL with no user-info, password or parameter) and the prefix.
	Engine string `json:"e,omitempty"`
	Prefix string `json:"p,omitempty"`
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
	if err == nil && (Printable("", h.Engine) != nil || Printable("", h.Prefix) != nil) {
		err = ErrInvalid // shown in a message: printable text only
	}
	if err != nil || h.Key == "" || h.Owner == "" || h.Token == 0 {
		return Handle{}, Invalidf("the handle is malformed: pass the DISTLOCK_HANDLE value printed by distlock acquire")
	}
	return h, nil
}

// Placed is h with where its lock lives: engine (backend.Locate's name
// of it) and prefix.
func (h Handle) Placed(engine, prefix string) Handle {
	h.Engine, h.Prefix = engine, prefix
	return h
}

// CheckPlace refuses (ErrInvalid, exit 64) a handle made on another
// engine or under another prefix than engine and prefix, those of the
// command (cmd) about to use it: there the handle's lock cannot be found,
// and release would say it has nothing to release while the lock stays
// held. A handle from an older build, which does not say where its lock
// lives, passes.
func (h Handle) CheckPlace(engine, prefix, cmd string) error {
	if h.Engine == "" || (sameEngine(h.Engine, engine) && h.Prefix == prefix) {
		return nil
	}
	return Invalidf("this handle was made on %s, prefix %s; run %s with the same --backend and --prefix", h.Engine, h.Prefix, cmd)
}

// clusterSchemes are the engines whose URL names members of one cluster,
// any of which reaches all of it: the same cluster may be named by other
// members (an etcd endpoint, a cluster seed node, a sentinel, a ZooKeeper
// or Consul server). Redlock is not among them: its masters are the lock.
var clusterSchemes = []string{"redis+sentinel", "redis+cluster", "etcd", "zk", "consul"}

// sameEngine reports whether a and b, two names backend.Locate gave,
// name one engine: equal, or of one cluster scheme and the same path and
// parameters, their member lists sharing a member.
func sameEngine(a, b string) bool {
	if a == b {
		return true
	}
	sa, ha, ra := splitEngine(a)
	sb, hb, rb := splitEngine(b)
	if sa != sb || ra != rb || !slices.Contains(clusterSchemes, sa) {
		return false
	}
	members := strings.Split(hb, ",")
	for _, m := range strings.Split(ha, ",") {
		if m != "" && slices.Contains(members, m) {
			return true
		}
	}
	return false
}

// splitEngine splits a Locate name into its scheme, its comma-separated
// hosts and the rest (path and parameters).
func splitEngine(s string) (scheme, hosts, rest string) {
	scheme, after, _ := strings.Cut(s, "://")
	if i := strings.IndexAny(after, "/?"); i >= 0 {
		return scheme, after[:i], after[i:]
	}
	return scheme, after, ""
}
