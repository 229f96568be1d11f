package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/distlock/distlock/internal/lock"
)

// TestResumeOfAKeyWithNoFiles: a handle of a key that has no lock file
// (never held here, or its directory gone since) is not held, and
// resuming it leaves no file behind.
func TestResumeOfAKeyWithNoFiles(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, "distlock")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := lock.Handle{Key: "job", Owner: "alice", Token: 7}
	if _, err := b.Resume(context.Background(), h); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("resume of a key with no files: %v, want not held", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("resume left %v behind", left)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resume(context.Background(), h); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("resume with the lock directory gone: %v, want not held", err)
	}
}
