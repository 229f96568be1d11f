package file

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDir is where locks live when no directory is given:
// $XDG_RUNTIME_DIR/distlock, else /tmp/distlock-<uid>.
func DefaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "distlock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("distlock-%d", os.Getuid()))
}

// maxBase keeps file names (plus a suffix) well under the usual 255-byte limit.
const maxBase = 200

// baseName maps any key to a safe file name: readable when it can be
// (letters, digits and ".-_:@=+," kept, everything else %XX-escaped),
// else a hash. The prefix keeps namespaces apart.
func baseName(prefix, key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_:@=+,", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	name := escapePrefix(prefix) + "#" + b.String()
	if len(name) > maxBase || strings.HasPrefix(b.String(), ".") {
		sum := sha256.Sum256([]byte(prefix + "\x00" + key))
		name = escapePrefix(prefix) + "#sha256-" + hex.EncodeToString(sum[:])
	}
	return name
}

func escapePrefix(p string) string {
	return strings.NewReplacer("/", "%2F", "#", "%23", "\x00", "").Replace(p)
}
