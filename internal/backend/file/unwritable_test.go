package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// blockRecordWrites makes every write of the record at path fail, as a full
// or read-only lock directory does, in a way that holds for root too (root
// writes into a read-only directory): the temporary file that each write
// renames into place (writeMeta; tmpName, which only this process can
// know) is a non-empty directory, which neither
// the write's open nor its clean-up can get rid of. The record itself can
// still be read, touched and removed. It returns the undo.
func blockRecordWrites(t *testing.T, path string) (undo func()) {
	t.Helper()
	tmp := tmpName(path)
	if err := os.MkdirAll(filepath.Join(tmp, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.RemoveAll(tmp); err != nil {
			t.Fatal(err)
		}
	}
}

// logBuffer collects a logger's output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

const cannotWrite = "cannot write the lock record"

// backdate rewrites l's record as last renewed an hour ago (its content and
// its modification time): a record nobody has renewed for long.
func backdate(t *testing.T, b *Backend, l lock.Lease) {
	t.Helper()
	path := recordOf(b, l)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["renewed_at"] = old
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// A lock directory that stops taking writes does not cost a held lock: the
// flock cannot expire. Renewal succeeds with one warning per streak of
// failures, status still shows the lock held and not overdue (the record
// is touched), and a break is still seen.
func TestRenewKeepsLockWhenRecordCannotBeWritten(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
			b := openTest(t)
			var logs logBuffer
			b.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
			ctx := context.Background()
			l, err := lock.TryOnce(ctx, b, lock.Request{Key: "ro", TTL: 2 * time.Second, Owner: "o", Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			backdate(t, b, l)
			if h, held, err := b.Inspect(ctx, "ro"); err != nil || !held || h.ExpiresIn != 0 {
				t.Fatalf("a record last renewed an hour ago: Inspect = %+v, %v, %v; want held, overdue", h, held, err)
			}

			unblock := blockRecordWrites(t, recordOf(b, l))
			for i := 0; i < 3; i++ {
				if err := l.Renew(ctx); err != nil {
					t.Fatalf("renewal %d with the record unwritable = %v, want nil (the flock still holds)", i, err)
				}
			}
			if n := logs.count(cannotWrite); n != 1 {
				t.Errorf("%d warnings for one streak of unwritable renewals, want 1:\n%s", n, logs.b.String())
			}
			m, ok, err := readMeta(recordOf(b, l))
			if err != nil || !ok || time.Since(m.RenewedAt) < 30*time.Minute {
				t.Fatalf("record = %+v, %v, %v: the writes were meant to fail", m, ok, err)
			}
			h, held, err := b.Inspect(ctx, "ro")
			if err != nil || !held || h.Token != l.Token() || h.ExpiresIn < time.Second {
				t.Errorf("while renewals cannot write: Inspect = %+v, %v, %v; want held by us, expiring more than 1s from now (the record was touched)", h, held, err)
			}

			// Writable again: the record is written; a new streak warns again.
			unblock()
			if err := l.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			if m, _, _ := readMeta(recordOf(b, l)); time.Since(m.RenewedAt) > time.Minute {
				t.Errorf("renewal once writable did not write the record: renewed_at %s", m.RenewedAt)
			}
			blockRecordWrites(t, recordOf(b, l))
			if err := l.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			if n := logs.count(cannotWrite); n != 2 {
				t.Errorf("%d warnings after a second streak began, want 2:\n%s", n, logs.b.String())
			}

			// A break is still seen while writes fail.
			if _, err := b.Break(ctx, "ro", l.Token()); err != nil {
				t.Fatal(err)
			}
			if err := l.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("renewal after a break with the record unwritable = %v, want ErrNotHeld", err)
			}
			if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("release after a break = %v, want ErrNotHeld", err)
			}
			if _, held, _ := b.Inspect(ctx, "ro"); held {
				t.Error("the lock is still held after release")
			}
		})
	}
}

// The same with a read-only lock directory, which only stops writes for a
// user without CAP_DAC_OVERRIDE (root writes into it all the same; the test
// above covers root). Release still frees the lock, leaving the record
// behind with a warning.
func TestRenewKeepsLockInReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only directory; TestRenewKeepsLockWhenRecordCannotBeWritten covers root")
	}
	b := openTest(t)
	var logs logBuffer
	b.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	l, err := lock.TryOnce(ctx, b, lock.Request{Key: "ro", TTL: 2 * time.Second, Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	backdate(t, b, l)
	if err := os.Chmod(b.dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(b.dir, 0o700)
	for i := 0; i < 3; i++ {
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("renewal %d in a read-only directory = %v, want nil", i, err)
		}
	}
	if n := logs.count(cannotWrite); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.b.String())
	}
	if h, held, err := b.Inspect(ctx, "ro"); err != nil || !held || h.ExpiresIn < time.Second {
		t.Errorf("Inspect = %+v, %v, %v; want held, not overdue", h, held, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("release in a read-only directory = %v, want nil (the flock is let go)", err)
	}
	if _, held, _ := b.Inspect(ctx, "ro"); held {
		t.Error("the lock is still held after release")
	}
}
