package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/lock/memstore"
)

// memFactory runs commands against one in-memory store, no server.
func memFactory(s *memstore.Store) (Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return Factory{
		Stdout: &out, Stderr: &errb,
		OpenEngine: func(context.Context, string, backend.Options) (lock.Backend, error) { return s, nil },
	}, &out, &errb
}

// Commands run against the in-memory store through the factory seam: the
// command's status passes through run, a held key is busy (75) naming its
// holder, status shows it, and break frees it.
func TestCommandsOnMemoryStore(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	f, _, errb := memFactory(s)
	if code := Run(ctx, f, []string{"run", "--key", "k", "--", "sh", "-c", "exit 3"}); code != 3 {
		t.Fatalf("run: exit %d, want the command's 3; stderr %q", code, errb)
	}
	if _, err := lock.TryOnce(ctx, s, lock.Request{Key: "k", TTL: time.Minute, Owner: "other", Meta: lock.Meta{Host: "host-b", PID: 4123}}); err != nil {
		t.Fatal(err)
	}
	f, _, errb = memFactory(s)
	if code := Run(ctx, f, []string{"run", "--key", "k", "--", "true"}); code != 75 || !strings.Contains(errb.String(), "host-b pid 4123") {
		t.Fatalf("run on a held key: exit %d, stderr %q; want 75 naming host-b pid 4123", code, errb)
	}
	f, out, _ := memFactory(s)
	if code := Run(ctx, f, []string{"status", "k"}); code != 0 || !strings.Contains(out.String(), "host-b") {
		t.Fatalf("status of a held key: exit %d, stdout %q", code, out)
	}
	f, _, errb = memFactory(s)
	if code := Run(ctx, f, []string{"break", "k", "--yes"}); code != 0 {
		t.Fatalf("break: exit %d, stderr %q", code, errb)
	}
	if _, held, _ := s.Inspect(ctx, "k"); held {
		t.Fatal("the key is still held after break")
	}
}
