package lock

import (
	"context"
	"regexp"
)

// Ledger is the store under the run ledger (--once-per, --slot, `distlock
// history`; docs/ARCHITECTURE.md, "The run ledger"): for each key, a small
// map of entries, id → bytes, kept in the engine beside the key's lock and
// apart from it. An engine stores and returns bytes and nothing more: what
// an entry says, how many are kept and whether a slot is done are
// internal/ledger's, written once for every engine.
//
// Entries outlive the lock: a release, an expiry or a break of the key
// leaves them as they are, and List and Inspect never show them. Every
// engine implements Ledger (the conformance suite checks it). Errors are
// as for the rest of the contract: an engine that cannot be reached
// answers a *UnavailableError.
type Ledger interface {
	// PutEntry creates entry id of key's ledger, or replaces it whole.
	PutEntry(ctx context.Context, key, id string, data []byte) error
	// Entries returns every entry of key's ledger: an empty map, not an
	// error, for a key that has none.
	Entries(ctx context.Context, key string) (map[string][]byte, error)
	// DeleteEntries removes the entries ids of key's ledger; an id that
	// is not there is no error.
	DeleteEntries(ctx context.Context, key string, ids []string) error
}

// MaxEntryLen is the longest ledger entry, in bytes: every engine stores
// one as a single value (a ZooKeeper node, an etcd or Consul key, a row).
const MaxEntryLen = 4096

// An entry id is 1–64 bytes of [A-Za-z0-9._-], not starting with a dot, so
// that every engine can use it as it is: a file name, a node name, the
// last segment of a key.
var entryID = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// ValidEntryID says whether id can name a ledger entry.
func ValidEntryID(id string) bool { return entryID.MatchString(id) }

// CheckEntry says why an engine cannot store data as entry id (an
// *InvalidError), or nil: an engine checks before it writes, so that an
// id never escapes its place (a path, a key, a list of ids) and no store
// truncates an entry.
func CheckEntry(id string, data []byte) error {
	if !ValidEntryID(id) {
		return Invalidf("ledger entry id %q: want 1 to 64 of [A-Za-z0-9._-], not starting with a dot", id)
	}
	if len(data) > MaxEntryLen {
		return Invalidf("ledger entry %s is %d bytes, more than %d", id, len(data), MaxEntryLen)
	}
	return nil
}
