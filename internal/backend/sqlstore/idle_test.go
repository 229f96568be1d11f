package sqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/internal/backend/mysql"
	"github.com/distlock/distlock/internal/backend/postgres"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/renew"
	"github.com/distlock/distlock/internal/testenv/server"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// engine is one SQL engine on a real server of its own, with its
// connection limit set, and a watcher: a connection of the test's that
// reads the server's own counts.
type engine struct {
	name string
	// start starts the server with max_connections limit; url is
	// distlock's URL for it.
	start func(dir string, limit int) (p *server.Process, url string, err error)
	open  func(ctx context.Context, url string) (lock.Backend, error)
	// watch opens the watcher: others are the client connections open
	// besides its own, opened the connections made since the server
	// started.
	watch func(t *testing.T, url string) (others, opened func() int)
	// fill opens connections until the server refuses one for want of
	// a slot; free closes them.
	fill func(t *testing.T, url string) (free func())
}

var engines = []engine{
	{
		name: "postgres",
		start: func(dir string, limit int) (*server.Process, string, error) {
			p, err := server.StartPostgresMaxConnections(dir, limit)
			if err != nil {
				return nil, "", err
			}
			return p, "postgres://" + server.PostgresUser + "@" + p.Addr() + "/postgres?sslmode=disable", nil
		},
		open: func(ctx context.Context, url string) (lock.Backend, error) {
			cfg, err := postgres.ParseURL(url)
			if err != nil {
				return nil, err
			}
			return postgres.New(ctx, cfg)
		},
		watch: watchPostgres,
		fill:  fillPostgres,
	},
	{
		name: "mariadb",
		start: func(dir string, limit int) (*server.Process, string, error) {
			p, err := server.StartMariaDBMaxConnections(dir, limit)
			if err != nil {
				return nil, "", err
			}
			return p, "mysql://" + server.MariaDBUser + "@" + p.Addr() + "/" + server.MariaDBDatabase, nil
		},
		open: func(ctx context.Context, url string) (lock.Backend, error) {
			cfg, err := mysql.ParseURL(url)
			if err != nil {
				return nil, err
			}
			return mysql.New(ctx, cfg)
		},
		watch: watchMariaDB,
		fill:  fillMariaDB,
	},
}

func ctx(t *testing.T) context.Context { return wait.Context(t, 10*time.Second) }

// each runs test on every engine, each with a server of its own whose
// max_connections is 10.
func each(t *testing.T, test func(t *testing.T, e engine, url string, b lock.Backend)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			p, url, err := e.start(t.TempDir(), 10)
			if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
				t.Skipf("%v: skipped (CI requires it)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			b, err := e.open(ctx(t), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			test(t, e, url, b)
		})
	}
}

func request(key string, ttl time.Duration) lock.Request {
	return lock.Request{Key: key, TTL: ttl, Owner: "owner-" + key, Meta: lock.Meta{Host: "h", PID: 42}}
}

// A holder holds no connection between its requests (issue 25): the
// acquire's connection is closed once it is done, and a renewal opens
// one connection and closes it again.
func TestIdleHolderHoldsNoConnection(t *testing.T) {
	each(t, func(t *testing.T, e engine, url string, b lock.Backend) {
		others, opened := e.watch(t, url)
		l, err := lock.TryOnce(ctx(t), b, request("idle", 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wait.Until(t, 5*time.Second, "the holder to hold no connection after acquiring", func() bool { return others() == 0 })
		before := opened()
		if err := l.Renew(ctx(t)); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, 5*time.Second, "the holder to hold no connection after renewing", func() bool { return others() == 0 })
		wait.Until(t, 5*time.Second, "the server to count the renewal's connection", func() bool { return opened() > before })
		if n := opened() - before; n != 1 {
			t.Errorf("a renewal opened %d connections, want 1", n)
		}
	})
}

// A renewal that finds no connection left on the server (SQLSTATE 53300,
// MySQL's error 1040) is a transient failure: the keeper tries again,
// and the lease, still valid, is kept once the server has room again.
func TestKeeperRidesOutAFullServer(t *testing.T) {
	each(t, func(t *testing.T, e engine, url string, b lock.Backend) {
		l, err := lock.TryOnce(ctx(t), b, request("full", 6*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var logged syncBuffer
		k := renew.Start(l, renew.Timing{TTL: 6 * time.Second, KillGrace: time.Second}, slog.New(slog.NewTextHandler(&logged, nil)))
		defer k.Stop()
		free := e.fill(t, url)
		err = l.Renew(ctx(t))
		if !lock.Transient(err) || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "no connection left") {
			t.Fatalf("a renewal on a full server: %v; want a transient failure naming the limit", err)
		}
		k.Poke()
		wait.Until(t, 3*time.Second, "the keeper's renewal to meet the full server", func() bool {
			select {
			case loss := <-k.Lost():
				t.Fatalf("lease lost on a full server: %v", loss.Err)
			default:
			}
			return strings.Contains(logged.String(), "renew failed") && strings.Contains(logged.String(), "no connection left")
		})
		free()
		select {
		case err := <-k.Confirm():
			if err != nil {
				t.Fatalf("the keeper gave up: %v\n%s", err, logged.String())
			}
		case loss := <-k.Lost():
			t.Fatalf("lease lost: %v\n%s", loss.Err, logged.String())
		case <-time.After(5 * time.Second):
			t.Fatalf("no renewal within 5s of the server having room again\n%s", logged.String())
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the keeper's goroutine to log to
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// watchPostgres counts client backends in pg_stat_activity, and sessions
// in pg_stat_database (flushed when a session ends).
func watchPostgres(t *testing.T, url string) (others, opened func() int) {
	c, err := pgx.Connect(ctx(t), url+"&application_name=watcher")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	count := func(query string) func() int {
		return func() int {
			var n int
			if _, err := c.Exec(ctx(t), "SELECT pg_stat_clear_snapshot()"); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRow(ctx(t), query).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return count("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"),
		count("SELECT sum(sessions) FROM pg_stat_database")
}

func fillPostgres(t *testing.T, url string) (free func()) {
	var conns []*pgx.Conn
	free = func() {
		for _, c := range conns {
			c.Close(context.Background())
		}
		conns = nil
	}
	t.Cleanup(free)
	for range 20 {
		c, err := pgx.Connect(ctx(t), url)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "53300" {
			return free
		}
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	t.Fatal("postgres took 20 connections: its max_connections is not 10")
	return nil
}

// mariadbDB is a database/sql handle on the server at url (distlock's
// form).
func mariadbDB(t *testing.T, url string) *sql.DB {
	cfg, err := mysql.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysqldrv.NewConnector(cfg.Driver)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db
}

// watchMariaDB reads the status counters Threads_connected (less its own
// connection) and Connections (every connection attempt).
func watchMariaDB(t *testing.T, url string) (others, opened func() int) {
	c, err := mariadbDB(t, url).Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	status := func(name string, less int) func() int {
		return func() int {
			var k, v string
			if err := c.QueryRowContext(ctx(t), "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n - less
		}
	}
	return status("Threads_connected", 1), status("Connections", 0)
}

func fillMariaDB(t *testing.T, url string) (free func()) {
	db := mariadbDB(t, url)
	db.SetMaxIdleConns(0) // free closes them, not keeps them idle
	var conns []*sql.Conn
	free = func() {
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	t.Cleanup(free)
	for range 20 {
		c, err := db.Conn(ctx(t))
		var me *mysqldrv.MySQLError
		if errors.As(err, &me) && me.Number == 1040 {
			return free
		}
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	t.Fatal("mariadb took 20 connections: its max_connections is not 10")
	return nil
}
