package mysql

import (
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

// TestTooManyConnectionsNamed: a server whose max_connections are all
// taken refuses distlock with error 1040 (ER_CON_COUNT_ERROR); the one
// line names the setting and how to raise it.
func TestTooManyConnectionsNamed(t *testing.T) {
	p, err := server.StartMariaDBMaxConnections(t.TempDir(), 10) // MariaDB's least
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skipf("%v: the MySQL engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	fillConnections(t, p.Addr())
	cfg, err := ParseURL(serverURL(p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(ctx(t), cfg)
	var ue *lock.UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want a *lock.UnavailableError", err, err)
	}
	for _, want := range []string{"has no connection left", "error 1040", "max_connections", "SET GLOBAL max_connections"} {
		if !strings.Contains(ue.Msg, want) {
			t.Errorf("message %q lacks %q", ue.Msg, want)
		}
	}
	if strings.Contains(ue.Msg, "\n") {
		t.Errorf("message %q is not one line", ue.Msg)
	}
}

// fillConnections opens connections as root until the server refuses
// one with 1040 (a SUPER user gets one more than max_connections), and
// keeps them open until the test ends.
func fillConnections(t *testing.T, addr string) {
	t.Helper()
	cfg := mysqldrv.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = server.MariaDBUser, "tcp", addr
	connector, err := mysqldrv.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	for range 20 {
		c, err := db.Conn(ctx(t))
		var me *mysqldrv.MySQLError
		if errors.As(err, &me) && me.Number == tooManyConnections {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the server took 20 connections: its max_connections is not 10")
}

// TestDoctorConnectionHeadroom: doctor warns once fewer than a fifth of
// max_connections are free, and names the setting.
func TestDoctorConnectionHeadroom(t *testing.T) {
	p, err := server.StartMariaDBMaxConnections(t.TempDir(), 10)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skipf("%v: the MySQL engine's tests are skipped (CI requires them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	b := open(t, p.Addr(), "")
	req := lock.DoctorRequest{TTL: 3 * time.Second, Timeout: 5 * time.Second}
	// b.Doctor's checks: the clock's, then the connections'.
	if c := b.Doctor(ctx(t), req)[1]; c.Status != lock.CheckOK || !strings.Contains(c.Detail, "of max_connections 10 in use") {
		t.Fatalf("a few connections of 10: %+v", c)
	}
	fillConnections(t, p.Addr())
	c := b.Doctor(ctx(t), req)[1]
	if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "of max_connections 10 in use: 0 free") || !strings.Contains(c.Fix, "SET GLOBAL max_connections") {
		t.Fatalf("every connection taken: %+v", c)
	}
}
