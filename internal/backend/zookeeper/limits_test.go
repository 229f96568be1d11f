package zookeeper

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

// startLimited starts a ZooKeeper that accepts at most n connections
// from one client IP.
func startLimited(t *testing.T, n int) *server.Process {
	t.Helper()
	p, err := server.StartZooKeeperMaxClientCnxns(t.TempDir(), n)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skipf("%v: the ZooKeeper engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// wantRefusedLine checks that err is the one line naming maxClientCnxns.
func wantRefusedLine(t *testing.T, err error) {
	t.Helper()
	var ue *lock.UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want a *lock.UnavailableError", err, err)
	}
	for _, want := range []string{"closed the connection at once", "maxClientCnxns", "raise maxClientCnxns in zoo.cfg"} {
		if !strings.Contains(ue.Msg, want) {
			t.Errorf("message %q lacks %q", ue.Msg, want)
		}
	}
	if strings.Contains(ue.Msg, "\n") || strings.Contains(ue.Msg, "check the address") {
		t.Errorf("message %q: want one line that does not send the user to the address", ue.Msg)
	}
}

// TestConnectionLimitNamed: a server at its maxClientCnxns accepts each
// further connection and closes it at once; New says so, naming the
// setting, within the connect timeout.
func TestConnectionLimitNamed(t *testing.T) {
	p := startLimited(t, 1)
	_ = open(t, p.Addr(), "limit") // its session is the one connection allowed
	cfg, err := ParseURL("zk://" + p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = time.Second
	_, err = New(ctx(t), cfg)
	wantRefusedLine(t, err)
}

// TestContenderSessionBoundedByConnectTimeout: a contender's own session
// refused by the limit fails within the connect timeout even when the
// caller's context has no deadline (a run without --wait); it used to
// wait for ever.
func TestContenderSessionBoundedByConnectTimeout(t *testing.T) {
	p := startLimited(t, 1)
	cfg, err := ParseURL("zk://" + p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = time.Second
	b, err := New(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	done := make(chan error, 1)
	go func() {
		_, err := b.Contend(request("k", "o", 3*time.Second)).Try(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		wantRefusedLine(t, err)
	case <-ctx(t).Done():
		t.Fatal("Try still waits for a session the server refuses")
	}
}
