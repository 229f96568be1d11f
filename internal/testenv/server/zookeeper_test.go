package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// zkConnect opens a session with timeout st and waits until it is live.
func zkConnect(t *testing.T, addr string, st time.Duration) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, st, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(patience)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session on %s within %s", addr, patience)
		}
	}
}

func TestZooKeeper(t *testing.T) {
	dir := t.TempDir()
	begin := time.Now()
	p, err := StartZooKeeper(dir)
	p = started(t, p, err)
	t.Logf("zookeeper served %s after StartZooKeeper", time.Since(begin).Round(time.Millisecond))
	addr := p.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Addr() = %q", addr)
	}
	if _, err := os.Stat(filepath.Join(dir, "zoo.cfg")); err != nil {
		t.Error(err)
	}

	// The readiness probe checks that the server is ours.
	if err := zookeeperServes(t.Context(), addr, filepath.Join(dir, "zk.data")); err != nil {
		t.Fatal(err)
	}
	if err := zookeeperServes(t.Context(), addr, filepath.Join(dir, "other")); err == nil {
		t.Fatal("probe accepted a server with another data directory")
	}

	// A 2s session is granted as asked (minSessionTimeout is low enough).
	c := zkConnect(t, addr, 2*time.Second)
	cons, err := FourLetterWord(ctxFor(t, patience), addr, "cons")
	if err != nil || !strings.Contains(cons, fmt.Sprintf("sid=0x%x,", c.SessionID())) || !strings.Contains(cons, ",to=2000,") {
		t.Fatalf("cons does not show session 0x%x with a 2000ms timeout: %q, %v", c.SessionID(), cons, err)
	}
	if _, err := c.Create("/kept", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Stopped: nothing is answered.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := FourLetterWord(ctxFor(t, quiet), addr, "ruok"); err == nil && got != "" {
		t.Fatalf("stopped zookeeper answered %q", got)
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	if got, err := FourLetterWord(ctxFor(t, patience), addr, "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok after Cont: %q, %v", got, err)
	}
	if b, _, err := c.Get("/kept"); err != nil || string(b) != "kept" {
		t.Fatalf("get /kept after Cont: %q, %v", b, err)
	}

	// Restarted while stopped: same address, data kept.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("Addr changed from %s to %s", addr, p.Addr())
	}
	c = zkConnect(t, addr, 2*time.Second)
	if b, _, err := c.Get("/kept"); err != nil || string(b) != "kept" {
		t.Fatalf("get /kept after Restart: %q, %v", b, err)
	}

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, addr)
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	c = zkConnect(t, addr, 2*time.Second)
	if b, _, err := c.Get("/kept"); err != nil || string(b) != "kept" {
		t.Fatalf("get /kept after Kill+Restart: %q, %v", b, err)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
