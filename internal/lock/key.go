package lock

import (
	"unicode"
	"unicode/utf8"
)

// MaxKeyLen is the longest key accepted, in bytes.
const MaxKeyLen = 512

// ValidateKey checks that key, given with --key, is 1–512 bytes of
// printable UTF-8.
func ValidateKey(key string) error {
	return validateKey(key, "give --key a name such as job:daily")
}

// ValidateKeyArg is ValidateKey for a key given as the KEY argument of
// command (status, break, history): an empty one is named as such.
func ValidateKeyArg(key, command string) error {
	return validateKey(key, "name it, as in distlock "+command+" job:daily")
}

// validateKey checks key; how says how to name one when it is empty.
func validateKey(key, how string) error {
	switch {
	case key == "":
		return Invalidf("key is empty: %s", how)
	case len(key) > MaxKeyLen:
		return Invalidf("key is %d bytes long; the limit is %d", len(key), MaxKeyLen)
	}
	return Printable("key", key)
}

// ValidatePrefix checks that a --prefix is non-empty printable UTF-8: it
// ends up in every engine's key, node, file and row names, where a
// control character (a newline in a file name, a log line) has no place.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return Invalidf("--prefix must not be empty")
	}
	return Printable("--prefix", prefix)
}

// Printable refuses s, named what in the message, unless it is valid
// UTF-8 with no control or non-printable character.
func Printable(what, s string) error {
	if !utf8.ValidString(s) {
		return Invalidf("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return Invalidf("%s %q holds a control or non-printable character; use printable text", what, s)
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
