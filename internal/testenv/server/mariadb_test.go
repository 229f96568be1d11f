package server

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// myConnect opens one connection (no pool surprises) to the test database.
func myConnect(t *testing.T, addr string) *sql.Conn {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = MariaDBUser, "tcp", addr, MariaDBDatabase
	cfg.Timeout = patience
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func myQuery(c *sql.Conn, d time.Duration, q string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var s string
	err := c.QueryRowContext(ctx, q).Scan(&s)
	return s, err
}

func TestMariaDB(t *testing.T) {
	dir := t.TempDir()
	begin := time.Now()
	p, err := StartMariaDB(dir)
	p = started(t, p, err)
	t.Logf("mariadb answered %s after StartMariaDB", time.Since(begin).Round(time.Millisecond))
	addr := p.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Addr() = %q", addr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "mariadb.log")); err != nil || fi.Size() == 0 {
		t.Errorf("mariadb.log in dir: %v", err)
	}
	data, err := os.Readlink(filepath.Join(dir, "mariadb.data"))
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(filepath.Dir(data), "mariadbd.pid")

	// The readiness probe checks that the server is ours.
	if err := mariadbAnswers(t.Context(), addr, pidFile); err != nil {
		t.Fatal(err)
	}
	if err := mariadbAnswers(t.Context(), addr, pidFile+".other"); err == nil {
		t.Fatal("probe accepted a server with another pid file")
	}

	c := myConnect(t, addr)
	if v, err := myQuery(c, patience, "SELECT VERSION()"); err != nil || !strings.Contains(v, "MariaDB") {
		t.Fatalf("VERSION() = %q, %v", v, err)
	}
	if _, err := c.ExecContext(t.Context(), "CREATE TABLE kept (v VARCHAR(10)) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(t.Context(), "INSERT INTO kept VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := myQuery(c, quiet, "SELECT 'alive'"); err == nil {
		t.Fatalf("stopped mariadb answered %q", got)
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	c = myConnect(t, addr)
	if got, err := myQuery(c, patience, "SELECT v FROM kept"); err != nil || got != "kept" {
		t.Fatalf("after Cont: %q, %v", got, err)
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
	c = myConnect(t, addr)
	if got, err := myQuery(c, patience, "SELECT v FROM kept"); err != nil || got != "kept" {
		t.Fatalf("after Restart: %q, %v", got, err)
	}

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, addr)
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	c = myConnect(t, addr)
	if got, err := myQuery(c, patience, "SELECT v FROM kept"); err != nil || got != "kept" {
		t.Fatalf("after Kill+Restart: %q, %v", got, err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, addr)
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data directory %s after Close: %v", data, err)
	}
}

// A server starting must leave another running server's temporary tables
// alone: mariadbd deletes every "#sql*" file in its tmpdir at start, and
// each test server once shared /tmp.
func TestMariaDBStartSparesOtherServersTempTables(t *testing.T) {
	a, err := StartMariaDB(t.TempDir())
	a = started(t, a, err)
	defer a.Close()
	c := myConnect(t, a.Addr())
	for _, q := range []string{
		"CREATE TEMPORARY TABLE scratch (v INT) ENGINE=Aria",
		"INSERT INTO scratch VALUES (1)",
	} {
		if _, err := c.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b, err := StartMariaDB(t.TempDir())
	b = started(t, b, err)
	defer b.Close()
	if _, err := c.ExecContext(t.Context(), "DROP TEMPORARY TABLE scratch"); err != nil {
		t.Fatalf("the first server lost its temporary table's files when the second started: %v", err)
	}
}
