package file

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// tmpRoot holds the default lock directory: /tmp, literally, whatever
// the environment says. Neither $XDG_RUNTIME_DIR (which systemd-logind
// sets for login sessions, and cron does not) nor $TMPDIR (os.TempDir):
// a job run by hand and its cron copy must find the same directory, or
// both run at once. Only tests change it (SetTestTmpRoot).
var tmpRoot = "/tmp"

// DefaultDir is where locks live when no directory is given:
// /tmp/distlock-<uid>, the same for every process of the user that sees
// the machine's /tmp.
func DefaultDir() string {
	return filepath.Join(tmpRoot, fmt.Sprintf("distlock-%d", os.Getuid()))
}

// SetTestTmpRoot is for tests only: it puts the default lock directory in
// dir instead of /tmp, so that a test's runs never share the machine's
// /tmp/distlock-<uid> (nor each other's). distlock itself never calls it,
// and no environment variable reaches it.
func SetTestTmpRoot(dir string) { tmpRoot = dir }

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

// maxPrefix is the longest escaped prefix: followed by a hashed key
// ("#sha256-" and 64 hex digits) it still fits in maxBase.
const maxPrefix = maxBase - len("#sha256-") - 2*sha256.Size

// checkPrefix refuses a prefix that cannot make file names: one holding a
// control or non-printable character (a newline in a file name), or too
// long once escaped (the system would refuse every name: "file name too
// long").
func checkPrefix(prefix string) error {
	if err := lock.Printable("--prefix", prefix); err != nil {
		return err
	}
	if n := len(escapePrefix(prefix)); n > maxPrefix {
		return lock.Invalidf("--prefix is %d bytes long in file names; the file engine takes at most %d", n, maxPrefix)
	}
	return nil
}

// escapePrefix makes a prefix part of a file name: '/' is "%2F" and '#'
// "%23", and a '%' that starts one of the three escapes ("%2F", "%23",
// "%25") is "%25", so that no two prefixes share a name ("a/b" and
// "a%2Fb" did). Any other '%' is kept: every prefix that does not hold
// one of those three keeps the file names earlier versions gave it, and
// so its held locks and counters across an upgrade.
func escapePrefix(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			b.WriteString("%2F")
		case c == '#':
			b.WriteString("%23")
		case c == '%' && startsEscape(p[i+1:]):
			b.WriteString("%25")
		case c != 0: // a NUL cannot be in a file name (nor pass checkPrefix)
			b.WriteByte(c)
		}
	}
	return b.String()
}

// startsEscape reports whether s, after a '%', would read as an escape.
func startsEscape(s string) bool {
	return strings.HasPrefix(s, "2F") || strings.HasPrefix(s, "23") || strings.HasPrefix(s, "25")
}

// keyPaths names a key's files in the lock directory.
type keyPaths struct{ base string }

func (b *Backend) keyPaths(key string) keyPaths {
	return keyPaths{base: filepath.Join(b.dir, baseName(b.prefix, key))}
}

// lock is the key's lock file: its mutex holder's flock (LOCK_EX), shared
// (LOCK_SH) by its semaphore holders (slots.go).
func (p keyPaths) lock() string { return p.base + ".lock" }

// record is the mutex holder's record.
func (p keyPaths) record() string { return p.base + ".json" }

// token is the key's fencing counter (token.go), one for every limit.
func (p keyPaths) token() string { return p.base + ".token" }

// recLock is the key's record lock (record.go), shared by every record of
// the key. '#' keeps it apart from any key's own files (baseName escapes
// '#').
func (p keyPaths) recLock() string { return p.base + "#rec.lock" }

// semLock is the short flock that serialises a semaphore's slot choice.
func (p keyPaths) semLock() string { return p.base + "#sem.lock" }

// semSlot names slot i of a semaphore: "<base>#slot<i>.lock" and ".json".
func (p keyPaths) semSlot(i int) (lockPath, recordPath string) {
	s := p.base + "#slot" + strconv.Itoa(i)
	return s + ".lock", s + ".json"
}
