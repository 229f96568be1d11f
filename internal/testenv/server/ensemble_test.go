package server

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// skipMissing skips the test when a binary is missing, unless
// DISTLOCK_TEST_REQUIRE_SERVERS=1, and fails it on any other error.
func skipMissing(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestEtcdCluster: three members form one cluster (a key put through one
// is read through another), one of them leads, and Endpoints names all.
func TestEtcdCluster(t *testing.T) {
	c, err := StartEtcdCluster(t.TempDir(), 3)
	skipMissing(t, err)
	t.Cleanup(func() { c.Close() })
	if len(c.Members) != 3 || len(strings.Split(c.Endpoints(), ",")) != 3 {
		t.Fatalf("%d members, endpoints %q", len(c.Members), c.Endpoints())
	}
	leader, err := c.Leader(ctxFor(t, patience))
	if err != nil || !slices.Contains(c.Members, leader) {
		t.Fatalf("leader %v, %v", leader, err)
	}
	etcdKV(t, c.Members[0].Addr(), "put", map[string]string{"key": "k", "value": "shared"})
	if got := etcdKV(t, c.Members[2].Addr(), "range", map[string]string{"key": "k"}); !strings.Contains(got, `"count":"1"`) {
		t.Fatalf("member 2 reads %s", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Members {
		waitRefused(t, p.Addr())
	}
}

// TestZooKeeperEnsemble: three servers form one ensemble with exactly one
// leader, and Addrs names all.
func TestZooKeeperEnsemble(t *testing.T) {
	e, err := StartZooKeeperEnsemble(t.TempDir(), 3)
	skipMissing(t, err)
	t.Cleanup(func() { e.Close() })
	if len(e.Servers) != 3 || len(strings.Split(e.Addrs(), ",")) != 3 {
		t.Fatalf("%d servers, addrs %q", len(e.Servers), e.Addrs())
	}
	leaders := 0
	for _, p := range e.Servers {
		srvr, err := FourLetterWord(ctxFor(t, patience), p.Addr(), "srvr")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(srvr, "Mode: leader") {
			leaders++
		}
	}
	leader, err := e.Leader(ctxFor(t, patience))
	if leaders != 1 || err != nil || !slices.Contains(e.Servers, leader) {
		t.Fatalf("%d servers say they lead; Leader: %v, %v", leaders, leader, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range e.Servers {
		waitRefused(t, p.Addr())
	}
}
