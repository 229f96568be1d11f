package lock

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

func TestHolderID(t *testing.T) {
	const owner = "72cfd42f170b9ea6d332229106db94cb"
	id := HolderID(owner)
	// The exact value is pinned: scripts and dashboards compare ids taken
	// from status, list and logs of different distlock versions. The same
	// from a shell: printf 'distlock holder id v1\0%s' OWNER | sha256sum
	if id != "942bc218274f" {
		t.Errorf("HolderID(%q) = %q", owner, id)
	}
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("HolderID = %q, want 12 hex digits", id)
	}
	if HolderID(owner) != id {
		t.Error("HolderID is not deterministic")
	}
	if strings.Contains(owner, id) {
		t.Errorf("HolderID %q is a piece of the owner %q", id, owner)
	}
	// Domain-separated: not a prefix of the bare SHA-256 of the owner.
	bare := sha256.Sum256([]byte(owner))
	if strings.HasPrefix(hex.EncodeToString(bare[:]), id) {
		t.Errorf("HolderID %q is the plain SHA-256 of the owner", id)
	}
	if HolderID("72cfd42f170b9ea6d332229106db94cc") == id {
		t.Error("two owners one digit apart share a holder id")
	}
	if HolderID("") != "" {
		t.Errorf("HolderID(\"\") = %q, want empty (no holder)", HolderID(""))
	}
	if (Holder{Owner: owner}).ID() != id {
		t.Error("Holder.ID differs from HolderID(Owner)")
	}
}
