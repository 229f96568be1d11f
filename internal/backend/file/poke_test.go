//go:build linux

package file

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

func TestGrantRecordsItsProcess(t *testing.T) {
	b := openTest(t)
	req := lock.Request{Key: "job", TTL: 2 * time.Second, Owner: "o", Meta: lock.Meta{Host: b.host, PID: os.Getpid()}}
	l, err := lock.TryOnce(context.Background(), b, req)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	m, _, _ := readMeta(b.keyPaths("job").record())
	want, ok := procID(os.Getpid())
	if !ok || m.ProcID != want {
		t.Fatalf("record's proc_id = %q, want %q (ok %v)", m.ProcID, want, ok)
	}
	// A record for another process's pid names no process to poke.
	if id := ownProcID(1); id != "" {
		t.Fatalf("ownProcID(1) = %q, want none", id)
	}
}

// TestBreakPokesOnlyTheHolder breaks a record that names a live process
// on this machine (a shell that catches SIGWINCH, stopped so that a signal
// sent to it stays pending, where /proc shows it): it is signalled only
// when the record's proc_id is that process's, not when it names an
// earlier process that had its pid, nor when the record has none (an
// older distlock's).
func TestBreakPokesOnlyTheHolder(t *testing.T) {
	cases := []struct {
		name   string
		procID func(real string) string
		poked  bool
	}{
		{"the holder", func(real string) string { return real }, true},
		{"pid reused", func(real string) string {
			i := strings.LastIndexByte(real, '/')
			start, _ := strconv.ParseUint(real[i+1:], 10, 64)
			return real[:i+1] + strconv.FormatUint(start-1, 10)
		}, false},
		{"older record", func(string) string { return "" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pid := stoppedCatcher(t)
			b := openTest(t)
			req := lock.Request{Key: "job", TTL: 2 * time.Second, Owner: "o", Meta: lock.Meta{Host: b.host, PID: pid}}
			l, err := lock.TryOnce(context.Background(), b, req)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(context.Background())
			path := b.keyPaths("job").record()
			m, _, _ := readMeta(path)
			real, ok := procID(pid)
			if !ok {
				t.Fatal("cannot read the catcher's proc id")
			}
			m.ProcID = c.procID(real)
			if err := writeMeta(path, m); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Break(context.Background(), "job", m.Token); err != nil {
				t.Fatal(err)
			}
			if got := winchPending(t, pid); got != c.poked {
				t.Fatalf("SIGWINCH pending = %v, want %v", got, c.poked)
			}
		})
	}
}

// stoppedCatcher starts a shell that catches SIGWINCH, waits until it
// does, and stops it (SIGSTOP): a SIGWINCH sent to it then stays pending.
func stoppedCatcher(t *testing.T) int {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command("sh", "-c", `trap : WINCH; touch "$1"; while :; do sleep 1; done`, "sh", ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	waitFor(t, "the shell's trap", func() bool { _, err := os.Stat(ready); return err == nil })
	syscall.Kill(pid, syscall.SIGSTOP)
	waitFor(t, "the shell to stop", func() bool { return procStatus(t, pid, "State:") == "T" })
	return pid
}

// winchPending reports whether process pid has a SIGWINCH pending.
func winchPending(t *testing.T, pid int) bool {
	mask, err := strconv.ParseUint(procStatus(t, pid, "ShdPnd:"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask&(1<<(syscall.SIGWINCH-1)) != 0
}

// procStatus is the first word of the line of /proc/PID/status that
// starts with field.
func procStatus(t *testing.T, pid int, field string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			return strings.Fields(string(rest))[0]
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
