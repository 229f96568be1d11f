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
	"github.com/distlock/distlock/internal/testenv/wait"
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
// keeps them open until the test ends (or until it closes one).
func fillConnections(t *testing.T, addr string) []*sql.Conn {
	t.Helper()
	cfg := mysqldrv.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = server.MariaDBUser, "tcp", addr
	connector, err := mysqldrv.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxIdleConns(0) // a connection closed is closed, not kept idle
	t.Cleanup(func() { db.Close() })
	var conns []*sql.Conn
	for range 20 {
		c, err := db.Conn(ctx(t))
		var me *mysqldrv.MySQLError
		if errors.As(err, &me) && me.Number == 1040 {
			return conns
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	t.Fatal("the server took 20 connections: its max_connections is not 10")
	return nil
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
	// Every connection taken but the one doctor opens to read them (it
	// holds none between its requests): 11 in use, a SUPER user's one
	// more than max_connections.
	conns := fillConnections(t, p.Addr())
	conns[0].Close()
	var c lock.Check
	wait.Until(t, 5*time.Second, "the server to have a connection free for doctor", func() bool {
		c = b.Doctor(ctx(t), req)[1]
		return !strings.Contains(c.Detail, "Too many connections")
	})
	if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "of max_connections 10 in use: 0 free") || !strings.Contains(c.Fix, "SET GLOBAL max_connections") {
		t.Fatalf("every connection taken: %+v", c)
	}
}
