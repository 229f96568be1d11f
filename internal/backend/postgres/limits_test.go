package postgres

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// TestTooManyClientsNamed: a server whose max_connections are all taken
// refuses distlock with SQLSTATE 53300; the one line names the setting
// and how to raise it.
func TestTooManyClientsNamed(t *testing.T) {
	const limit = 4 // superuser_reserved_connections is 3: the superuser gets all 4
	p, err := server.StartPostgresMaxConnections(t.TempDir(), limit)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skipf("%v: the PostgreSQL engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for range limit {
		c, err := pgx.Connect(ctx(t), serverURL(p.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx(t)) })
	}
	cfg, err := ParseURL(serverURL(p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(ctx(t), cfg)
	var ue *lock.UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want a *lock.UnavailableError", err, err)
	}
	for _, want := range []string{"has no connection left", "SQLSTATE 53300", "max_connections", "raise max_connections in postgresql.conf"} {
		if !strings.Contains(ue.Msg, want) {
			t.Errorf("message %q lacks %q", ue.Msg, want)
		}
	}
	if strings.Contains(ue.Msg, "\n") {
		t.Errorf("message %q is not one line", ue.Msg)
	}
}

// TestDoctorConnectionHeadroom: doctor warns once fewer than a fifth of
// max_connections are free, and names the setting.
func TestDoctorConnectionHeadroom(t *testing.T) {
	p := startServerMaxConnections(t, 10)
	b := open(t, p.Addr(), "")
	req := lock.DoctorRequest{TTL: 3 * time.Second, Timeout: 5 * time.Second}
	// b.Doctor's checks: the clock's, then the connections'.
	if c := b.Doctor(ctx(t), req)[1]; c.Status != lock.CheckOK || !strings.Contains(c.Detail, "of max_connections 10 in use") {
		t.Fatalf("one connection of 10: %+v", c)
	}
	for range 8 { // with doctor's own: 9 of 10
		c, err := pgx.Connect(ctx(t), serverURL(p.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx(t)) })
	}
	// A connection closed just before (doctor's own clock readings) may
	// still be counted, or hold its slot, until its backend has exited.
	var c lock.Check
	wait.Until(t, 5*time.Second, "the backends of closed connections to exit", func() bool {
		c = b.Doctor(ctx(t), req)[1]
		return strings.Contains(c.Detail, "9 of max_connections 10 in use")
	})
	if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "9 of max_connections 10 in use: 1 free") || !strings.Contains(c.Fix, "raise max_connections") {
		t.Fatalf("9 connections of 10: %+v", c)
	}
}
