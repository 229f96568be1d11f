package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
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
// that the server does not grant fails within the connect timeout even
// when the caller's context has no deadline (a run without --wait); it
// used to wait for ever.
func TestContenderSessionBoundedByConnectTimeout(t *testing.T) {
	p := startServer(t)
	px, err := faultproxy.New(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	cfg, err := ParseURL("zk://" + px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = time.Second
	b, err := New(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	px.Pause() // new connections are accepted and never answered
	t.Cleanup(px.Resume)
	done := make(chan error, 1)
	go func() {
		_, err := b.Contend(request("k", "o", 3*time.Second)).Try(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		var ue *lock.UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "gave no session in time") {
			t.Fatalf("err = %v, want the unavailable line", err)
		}
	case <-ctx(t).Done():
		t.Fatal("Try still waits for a session the server does not grant")
	}
}

// testAdmin is the backend's own session, dialled again if parked, for
// the test's own requests.
func (b *Backend) testAdmin(t *testing.T) *session {
	t.Helper()
	s, done, err := b.useAdmin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return s
}

// TestRunHoldsOneConnection: once its contender has a session of its
// own, a backend parks its own: as many holders as maxClientCnxns fit on
// one host, each on one connection, and the next is refused in one line.
// Inspect dials the backend's session again when asked.
func TestRunHoldsOneConnection(t *testing.T) {
	const limit = 3
	p := startLimited(t, limit)
	cfg, err := ParseURL("zk://" + p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = 2 * time.Second
	var holders []*Backend
	var leases []lock.Lease
	for i := range limit {
		b, err := New(ctx(t), cfg)
		if err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
		t.Cleanup(func() { b.Close() })
		l, err := b.Contend(request(fmt.Sprintf("k%d", i), "o", 3*time.Second)).Try(ctx(t))
		if err != nil {
			t.Fatalf("holder %d of %d allowed: %v", i+1, limit, err)
		}
		t.Cleanup(func() { l.Release(context.Background()) })
		holders, leases = append(holders, b), append(leases, l)
	}
	_, err = New(ctx(t), cfg)
	wantRefusedLine(t, err)
	if err := leases[0].Release(ctx(t)); err != nil { // its session ends: a connection frees up
		t.Fatal(err)
	}
	if _, _, err := holders[1].Inspect(ctx(t), "k1"); err != nil {
		t.Fatalf("Inspect once the backend's session was parked: %v", err)
	}
}
