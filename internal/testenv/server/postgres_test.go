package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func pgConnect(t *testing.T, addr string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := pgx.Connect(ctx, "postgres://"+PostgresUser+"@"+addr+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pgQuery runs a one-value query within d.
func pgQuery(c *pgx.Conn, d time.Duration, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var s string
	err := c.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

func TestPostgres(t *testing.T) {
	dir := t.TempDir()
	begin := time.Now()
	p, err := StartPostgres(dir)
	p = started(t, p, err)
	t.Logf("postgres answered %s after StartPostgres", time.Since(begin).Round(time.Millisecond))
	addr := p.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Addr() = %q", addr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "postgres.log")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("postgres.log in dir: %v", err)
	}
	data, err := os.Readlink(filepath.Join(dir, "postgres.data"))
	if err != nil {
		t.Fatal(err)
	}

	// The readiness probe checks that the server is ours.
	_, port, _ := strings.Cut(addr, ":")
	portN, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := postgresReady(data, p.pid, portN); err != nil {
		t.Fatal(err)
	}
	if err := postgresReady(data, p.pid+1, portN); err == nil {
		t.Fatal("probe accepted a server with another process id")
	}

	c := pgConnect(t, addr)
	if v, err := pgQuery(c, patience, "SELECT version()"); err != nil || !strings.HasPrefix(v, "PostgreSQL") {
		t.Fatalf("version() = %q, %v", v, err)
	}
	if _, err := c.Exec(t.Context(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	// A second connection is a second backend process in the group.
	c2 := pgConnect(t, addr)

	// Stopped: the whole group, backends included, answers nothing.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, conn := range []*pgx.Conn{c, c2} {
		if got, err := pgQuery(conn, quiet, "SELECT 'alive'"); err == nil {
			t.Fatalf("connection %d: stopped postgres answered %q", i, got)
		}
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	// pgx closes a connection whose query was cancelled by its context.
	c = pgConnect(t, addr)
	if got, err := pgQuery(c, patience, "SELECT v FROM kept"); err != nil || got != "kept" {
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
	c = pgConnect(t, addr)
	if got, err := pgQuery(c, patience, "SELECT v FROM kept"); err != nil || got != "kept" {
		t.Fatalf("after Restart: %q, %v", got, err)
	}

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, addr)
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	c = pgConnect(t, addr)
	if got, err := pgQuery(c, patience, "SELECT v FROM kept"); err != nil || got != "kept" {
		t.Fatalf("after Kill+Restart: %q, %v", got, err)
	}

	// Close removes the private data directory.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, addr)
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data directory %s after Close: %v", data, err)
	}
}
