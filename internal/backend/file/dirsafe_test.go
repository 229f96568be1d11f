package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// defaultDirIn puts the default directory under a fresh stand-in for
// /tmp (SetTestTmpRoot): never the machine's /tmp/distlock-<uid>.
func defaultDirIn(t *testing.T) string {
	t.Helper()
	setTmpRoot(t, t.TempDir())
	return DefaultDir()
}

// setTmpRoot puts the default directory in root for the test's duration.
func setTmpRoot(t *testing.T, root string) {
	t.Helper()
	old := tmpRoot
	SetTestTmpRoot(root)
	t.Cleanup(func() { SetTestTmpRoot(old) })
}

// A job run by hand from a login shell (systemd-logind sets
// XDG_RUNTIME_DIR; a user may set TMPDIR) and its cron copy (neither set)
// must lock in the same directory, or both run at once: the default is
// /tmp/distlock-<uid>, whatever the environment.
func TestDefaultDirIgnoresEnvironment(t *testing.T) {
	want := fmt.Sprintf("/tmp/distlock-%d", os.Getuid())
	for _, env := range [][2]string{{"", ""}, {t.TempDir(), ""}, {"", t.TempDir()}, {t.TempDir(), t.TempDir()}} {
		t.Setenv("XDG_RUNTIME_DIR", env[0])
		t.Setenv("TMPDIR", env[1])
		if got := DefaultDir(); got != want {
			t.Errorf("XDG_RUNTIME_DIR=%q TMPDIR=%q: DefaultDir() = %s; want %s", env[0], env[1], got, want)
		}
	}
}

// refused checks that opening the default directory fails as a refusal
// (exit 77) whose message has want.
func refused(t *testing.T, want string) {
	t.Helper()
	_, err := Open("", "distlock")
	var ue *lock.UnavailableError
	if !errors.As(err, &ue) || !ue.Refused || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open of the default directory = %v; want a refusal saying %q", err, want)
	}
	if b := OpenForDoctor("", "distlock"); b.dirErr == nil {
		t.Fatal("OpenForDoctor: no error for doctor to report")
	}
}

func TestDefaultDirMustBeOursAlone(t *testing.T) {
	t.Run("fresh", func(t *testing.T) {
		dir := defaultDirIn(t)
		if _, err := Open("", "distlock"); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(dir); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("default directory: %v, %v; want mode 0700", st, err)
		}
	})
	t.Run("others may write", func(t *testing.T) {
		dir := defaultDirIn(t)
		os.Mkdir(dir, 0o700)
		os.Chmod(dir, 0o777)
		refused(t, dir+" has mode 0777: others may write in it; run chmod go-w "+dir)
	})
	t.Run("symbolic link", func(t *testing.T) {
		dir := defaultDirIn(t)
		if err := os.Symlink(t.TempDir(), dir); err != nil {
			t.Fatal(err)
		}
		refused(t, dir+" is a symbolic link, not a directory")
	})
	t.Run("someone else's", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("making a directory owned by another user needs root")
		}
		dir := defaultDirIn(t)
		os.Mkdir(dir, 0o700)
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		refused(t, fmt.Sprintf("%s is owned by uid 65534, not you (uid 0): someone else made it; remove it", dir))
	})
	t.Run("named directory may be shared", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o777)
		if _, err := Open(dir, "distlock"); err != nil {
			t.Fatalf("a directory the user names is not held to ownership: %v", err)
		}
	})
}

// TestNoFileWrittenThroughALink plants, in a lock directory someone else
// may write in, a symbolic link at each name of a key's files, pointing
// at a victim file: taking the lock must fail, and the victim stay as it
// was.
func TestNoFileWrittenThroughALink(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim.txt")
	const content = "precious contents, not a token\n"
	req := lock.Request{Key: "job", TTL: 2 * time.Second, Owner: "o"}
	names := []func(keyPaths) string{keyPaths.lock, keyPaths.token, keyPaths.recLock, keyPaths.record,
		func(p keyPaths) string { return tmpName(p.record()) }}
	for _, nameOf := range names {
		b := openTest(t) // a directory with no file of the key yet
		p := b.keyPaths("job")
		name := nameOf(p)
		t.Run(filepath.Base(name), func(t *testing.T) {
			if err := os.WriteFile(victim, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, name); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(name)
			l, err := lock.TryOnce(context.Background(), b, req)
			if err == nil {
				// a record is replaced by rename: the link, not its target
				if name != p.record() {
					t.Error("the lock was granted through a link")
				}
				l.Release(context.Background())
			}
			if got, _ := os.ReadFile(victim); string(got) != content {
				t.Fatalf("the victim behind %s was written: %q", filepath.Base(name), got)
			}
		})
	}
	// nor is a record read through one
	p := openTest(t).keyPaths("job")
	other := filepath.Join(t.TempDir(), "record.json")
	os.WriteFile(other, []byte(`{"key":"job","owner":"someone","token":7}`), 0o600)
	os.Symlink(other, p.record())
	if m, ok, _ := readMeta(p.record()); ok {
		t.Errorf("a record was read through a link: %+v", m)
	}
}

func TestLedgerNotThroughALink(t *testing.T) {
	b := openTest(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, b.keyPaths("job").ledgerDir()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := "0000000000000001-00000000"
	if err := b.PutEntry(ctx, "job", id, []byte(`{}`)); err == nil {
		t.Error("an entry was written into a linked ledger directory")
	}
	os.WriteFile(filepath.Join(elsewhere, id), []byte(`{}`), 0o600)
	if _, err := b.Entries(ctx, "job"); err == nil {
		t.Error("a linked ledger directory was read")
	}
	if err := b.DeleteEntries(ctx, "job", []string{id}); err == nil {
		t.Error("an entry was deleted in a linked ledger directory")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
		t.Fatalf("the linked directory holds %d files, want the 1 put there", len(ents))
	}
}

// TestFIFONeverWaitedOn: a FIFO planted at a name of ours in a shared
// lock directory is refused at once, where an open (and a read) of it
// waited for a writer for ever: a try on a free key, and its status. (A
// record is written by rename: a grant replaces a FIFO there.)
func TestFIFONeverWaitedOn(t *testing.T) {
	req := lock.Request{Key: "job", TTL: 2 * time.Second, Owner: "o"}
	names := []func(keyPaths) string{keyPaths.lock, keyPaths.token, keyPaths.recLock, keyPaths.record}
	for _, nameOf := range names {
		b := openTest(t)
		name := nameOf(b.keyPaths("job"))
		replaced := name == b.keyPaths("job").record()
		t.Run(filepath.Base(name), func(t *testing.T) {
			if err := syscall.Mkfifo(name, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 2)
			go func() {
				l, err := lock.TryOnce(context.Background(), b, req)
				if err == nil {
					l.Release(context.Background())
				}
				_, _, ierr := b.Inspect(context.Background(), "job")
				done <- errors.Join(err, ierr)
			}()
			select {
			case err := <-done:
				if err == nil && !replaced {
					t.Error("a FIFO at a name of ours was taken for a file")
				}
			case <-time.After(10 * time.Second):
				// unblock the waiting open, so that the test can end
				if w, err := os.OpenFile(name, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				t.Fatalf("still waiting on the FIFO at %s after 10 s", filepath.Base(name))
			}
		})
	}
}
