package lock

import (
	"unicode"
	"unicode/utf8"
)

// MaxKeyLen is the longest key accepted, in bytes.
const MaxKeyLen = 512

// ValidateKey checks that key is 1–512 bytes of printable UTF-8.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return Invalidf("key is empty: give --key a name such as job:daily")
	case len(key) > MaxKeyLen:
		return Invalidf("key is %d bytes long; the limit is %d", len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return Invalidf("key is not valid UTF-8")
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return Invalidf("key %q holds a control or non-printable character; use printable text", key)
		}
	}
	return nil
}

// ValidateRequest checks what every engine needs of a request before it
// asks the engine anything: a valid key and a positive TTL.
func ValidateRequest(req Request) error {
	if err := ValidateKey(req.Key); err != nil {
		return err
	}
	if req.TTL <= 0 {
		return Invalidf("ttl must be positive (got %s)", req.TTL)
	}
	return nil
}
