package lock

import (
	"crypto/sha256"
	"encoding/hex"
)

// holderIDDomain separates the holder id's hash from any other use of
// SHA-256 over an owner id.
const holderIDDomain = "distlock holder id v1\x00"

// HolderIDLen is the length of a holder id in hex digits (48 bits).
const HolderIDLen = 12

// HolderID is the public name of the holder whose secret owner id is owner:
// the first HolderIDLen hex digits of SHA-256 over a domain tag and the
// owner. It is what status, list, logs and break show. The owner id itself
// is never printed: with the key and the token it is all a handle holds,
// so whoever reads it could release or extend the lock. The hash is one-way
// and owner ids are 128 random bits, so the id cannot be turned back into
// the owner. An empty owner (no holder) gives "".
func HolderID(owner string) string {
	if owner == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(holderIDDomain + owner))
	return hex.EncodeToString(sum[:])[:HolderIDLen]
}

// ID is h's public holder id (HolderID of its owner).
func (h Holder) ID() string { return HolderID(h.Owner) }
