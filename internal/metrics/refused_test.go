package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The names at PATH and PATH.lock may have been planted by another user
// of a shared textfile directory: these tests plant them.

// secretMetrics parses as metrics: a link to it must not get its series
// copied into the world-readable textfile.
const secretMetrics = "node_secret_value{pw=\"hunter2\"} 1\n"

// TestLockLinkNotFollowed: a symbolic link at PATH.lock is refused; no
// file is created at its target, and the textfile is not written.
func TestLockLinkNotFollowed(t *testing.T) {
	dir, victim := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "distlock.prom")
	target := filepath.Join(victim, "created-by-distlock")
	if err := os.Symlink(target, path+".lock"); err != nil {
		t.Fatal(err)
	}
	err := Write(path, run("job", OK, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Write = %v, want a refusal naming the link", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the link's target %s was created (%v)", target, err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s was written (%v)", path, err)
	}
}

// TestFileLinkNotFollowed: a symbolic link at PATH, to a file only its
// owner can read, is neither read nor replaced: its target is unchanged,
// and its content is neither copied into the directory nor quoted in the
// error, whether it parses as metrics or not.
func TestFileLinkNotFollowed(t *testing.T) {
	for name, secret := range map[string]string{
		"metrics":     secretMetrics,
		"not metrics": "hunter2SECRET\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "distlock.prom")
			target := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(target, []byte(secret), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			err := Write(path, run("job", OK, 0, 0))
			if err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("Write = %v, want a refusal naming the link", err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes the target's content: %v", err)
			}
			if b, _ := os.ReadFile(target); string(b) != secret {
				t.Errorf("the target became %q", b)
			}
			if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link at %s was replaced (%v)", path, err)
			}
			noFileHolds(t, dir, "hunter2")
		})
	}
}

// noFileHolds: no regular file in dir holds s.
func noFileHolds(t *testing.T, dir, s string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); strings.Contains(string(b), s) {
			t.Errorf("%s holds %q:\n%s", e.Name(), s, b)
		}
	}
}

// TestFIFORefused: a FIFO at PATH or at PATH.lock is refused at once
// (Write does not wait for a writer to open it), and left as it is.
func TestFIFORefused(t *testing.T) {
	for _, suffix := range []string{"", ".lock"} {
		t.Run("PATH"+suffix, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "distlock.prom")
			fifo := path + suffix
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- Write(path, run("job", OK, 0, 0)) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				unblock(fifo)
				t.Fatalf("Write still waits on the FIFO %s after 10s", fifo)
			}
			if err == nil || !strings.Contains(err.Error(), "FIFO") {
				t.Errorf("Write = %v, want a refusal naming the FIFO", err)
			}
			if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("the FIFO %s was replaced (%v)", fifo, err)
			}
		})
	}
}

// unblock opens fifo for writing and closes it, so that a reader stuck
// opening it goes on (and the test's goroutine ends).
func unblock(fifo string) {
	if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
