package server

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/testenv/wait"
)

// A dev agent (built once from internal/testenv/consulserver when missing,
// under DISTLOCK_TEST_REQUIRE_SERVERS=1: .ci/run's build step runs this
// test) answers as its own node with a leader, and comes back after
// Restart (empty: its data is in memory).
func TestConsulDevAgent(t *testing.T) {
	p, err := StartConsul(t.TempDir())
	p = started(t, p, err)
	bin, _ := ConsulBinaryPath()
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version, _, _ := strings.Cut(string(out), "\n")
	t.Logf("%s: %s", bin, version)
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	var leader string
	if err := consulGet(context.Background(), p.Addr(), "/v1/status/leader", &leader); err != nil || leader == "" {
		t.Fatalf("after Restart: leader %q, %v", leader, err)
	}
}

// The three servers elect a leader, and after the leader is killed the
// other two elect another.
func TestConsulClusterLeaderKilled(t *testing.T) {
	c, err := StartConsulCluster(t.TempDir(), 3)
	if errors.Is(err, ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	first, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, patience, "a new leader", func() bool {
		p, err := c.Leader(ctx)
		return err == nil && p != first
	})
}
