package file

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

func lockFileNames(t *testing.T, l lock.Lease) []string {
	t.Helper()
	var names []string
	for _, f := range l.(lock.FileLocked).LockFiles() {
		names = append(names, f.Name())
	}
	return names
}

// A mutex is slot 0 of 1, but on disk it keeps the files every distlock
// version uses for a mutex, "<base>.lock" and "<base>.json" with the same
// record: an older and a newer distlock on one machine exclude each other.
func TestMutexKeepsTheFilesOfEveryVersion(t *testing.T) {
	b := openTest(t)
	dir, ctx := b.dir, context.Background()
	lockPath, recordPath := filepath.Join(dir, "distlock#k.lock"), filepath.Join(dir, "distlock#k.json")
	l, err := lock.TryOnce(ctx, b, semRequest("k", "a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := lockFileNames(t, l); len(got) != 1 || got[0] != lockPath {
		t.Errorf("mutex lock files %q, want [%s]", got, lockPath)
	}
	// An older distlock's mutex acquirer: LOCK_EX on the same file.
	other, err := os.OpenFile(lockPath, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("flock of %s beside a held mutex: %v, want EWOULDBLOCK", lockPath, err)
	}
	data, err := os.ReadFile(recordPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["key"] != "k" || rec["token"] != float64(l.Token()) || rec["limit"] != nil || rec["slot"] != nil {
		t.Errorf("mutex record %s, want key k, token %d, no limit or slot", data, l.Token())
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*#slot*")); len(matches) > 0 {
		t.Errorf("a mutex made slot files: %q", matches)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// An older distlock holds the mutex: the key is busy for every limit.
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var busy *lock.BusyError
	if _, err := lock.TryOnce(ctx, b, semRequest("k", "b", 1)); !errors.As(err, &busy) {
		t.Errorf("mutex beside an older holder: %v, want busy", err)
	}
	var mismatch *lock.LimitMismatchError
	if _, err := lock.TryOnce(ctx, b, semRequest("k", "b", 2)); !errors.As(err, &mismatch) || mismatch.Have != 1 {
		t.Errorf("semaphore beside an older mutex holder: %v, want limit 1 in use", err)
	}
}

// A semaphore's slot holds its own lock file and shares the key's.
func TestSemaphoreSlotHoldsItsFileAndSharesTheKeys(t *testing.T) {
	b := openTest(t)
	dir, ctx := b.dir, context.Background()
	l, err := lock.TryOnce(ctx, b, semRequest("s", "a", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	want := []string{filepath.Join(dir, "distlock#s#slot0.lock"), filepath.Join(dir, "distlock#s.lock")}
	if got := lockFileNames(t, l); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("slot lock files %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "distlock#s#slot0.json")); err != nil {
		t.Errorf("slot record: %v", err)
	}
}

// A prefix that cannot make file names is a usage error (exit 64), not a
// failure of the directory (69): one too long once escaped ("file name too
// long" from every open), or one holding a control character.
func TestPrefixMustMakeFileNames(t *testing.T) {
	dir := t.TempDir()
	for _, prefix := range []string{strings.Repeat("p", 300), strings.Repeat("/", maxPrefix/3+1), "a\nb", "a\x00b", "tab\there"} {
		if _, err := Open(dir, prefix); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Open with --prefix %q: %v, want a usage error", prefix, err)
		}
	}
	// The longest prefix allowed makes every file, the longest key too.
	b, err := Open(dir, strings.Repeat("p", maxPrefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, req := range []lock.Request{semRequest(strings.Repeat("k", lock.MaxKeyLen), "a", 1), semRequest("s", "a", 99)} {
		l, err := lock.TryOnce(ctx, b, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.PutEntry(ctx, req.Key, strings.Repeat("e", 64), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
}

// Distinct prefixes never share file names; a prefix keeps the names that
// earlier versions gave it unless it holds "%2F", "%23" or "%25".
func TestPrefixesNeverShareNames(t *testing.T) {
	prefixes := []string{"a/b", "a%2Fb", "a%252Fb", "a#b", "a%23b", "a%25b", "a%b", "a%%2Fb", "a%/b", "a%2/b", "%", "%2", "a%2fb"}
	seen := map[string]string{}
	for _, p := range prefixes {
		name := baseName(p, "k")
		if q, ok := seen[name]; ok {
			t.Errorf("prefixes %q and %q share the file name %q", q, p, name)
		}
		seen[name] = p
	}
	kept := map[string]string{"distlock": "distlock", "a/b": "a%2Fb", "a#b": "a%23b", "50%": "50%", "a%b": "a%b", "a%2fb": "a%2fb"}
	for p, want := range kept {
		if got := escapePrefix(p); got != want {
			t.Errorf("escapePrefix(%q) = %q, want %q as earlier versions", p, got, want)
		}
	}
}
