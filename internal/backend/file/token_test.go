package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNextTokenNeverGoesBackwards(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.token")
	now := time.UnixMicro(1_000_000)
	a, err := nextToken(path, now)
	if err != nil || a != 1_000_000 {
		t.Fatalf("first token = %d, %v; want the time in µs", a, err)
	}
	// The clock stands still or steps back: the counter still rises.
	b, _ := nextToken(path, now)
	c, _ := nextToken(path, now.Add(-time.Hour))
	if b != a+1 || c != b+1 {
		t.Fatalf("tokens %d, %d, %d do not rise by one", a, b, c)
	}
	// A counter written by an older version (shorter, by rename) is read.
	os.WriteFile(path, []byte("5000000\n"), 0o600)
	d, _ := nextToken(path, now)
	if d != 5000001 {
		t.Fatalf("token after an old-format counter = %d, want 5000001", d)
	}
	// The counter file is lost: the clock keeps tokens rising.
	os.Remove(path)
	e, _ := nextToken(path, time.Now())
	if e <= d {
		t.Fatalf("token after losing the counter = %d, not above %d", e, d)
	}
}
