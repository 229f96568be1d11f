package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/testenv/server"
)

// The SQL engines' requests, counted by the server's own statistics:
// transactions on PostgreSQL, statements on MariaDB. Both are exact once
// the clients have gone (a PostgreSQL backend reports its figures when it
// ends, or within 10 s when idle), so the scale mode counts them for the
// long queues, whose contenders have all exited when the window ends, and
// not for idle holders.

// pgCounter counts transactions committed and rolled back in all
// databases (pg_stat_database): one per statement outside a transaction,
// one per batch, one per explicit transaction.
type pgCounter struct{ url string }

func (pgCounter) what() string {
	return "transactions PostgreSQL committed or rolled back (pg_stat_database; one per statement or batch sent alone), less the bench's own; long queues only"
}

func (c pgCounter) read() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT sum(xact_commit + xact_rollback)::bigint FROM pg_stat_database").Scan(&n)
	return n, err
}

// myCounter counts the statements MariaDB executed for clients
// (Questions).
type myCounter struct{ addr string }

func (myCounter) what() string {
	return "statements MariaDB ran for clients (SHOW GLOBAL STATUS Questions; each of a multi-statement query), less the bench's own; long queues only"
}

func (c myCounter) read() (int64, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = server.MariaDBUser, "tcp", c.addr
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return 0, err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var name string
	var n int64
	err = db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n)
	return n, err
}

// statCounter is a counter read from a server-wide total.
type statCounter interface {
	read() (int64, error)
	what() string
}

// settledCounter opens windows on a statCounter: the total is read until
// two readings 100 ms apart add only the bench's own (ended clients may
// report a moment late), and each reading's own share is taken off.
type settledCounter struct {
	statCounter
	self int64 // what one reading adds
}

func newSettledCounter(c statCounter) (settledCounter, error) {
	a, err := c.read()
	if err != nil {
		return settledCounter{}, err
	}
	time.Sleep(200 * time.Millisecond)
	b, err := c.read()
	return settledCounter{c, b - a}, err
}

// settled is a total that stopped moving, and the readings made to see it.
type settled struct {
	total int64
	reads int
}

// begin opens a window whose end takes off the bench's own readings: the
// window's first one and every reading of end's but its last.
func (c settledCounter) begin() (window, error) {
	return beginDiff(c.settle, func(before, after settled) Count {
		return Count{Requests: after.total - before.total - int64(after.reads)*c.self}
	})
}

// settle reads until the total stops moving but for the bench's own
// reading (at most 5 s).
func (c settledCounter) settle() (settled, error) {
	prev, err := c.read()
	reads := 1
	for range 50 {
		if err != nil {
			return settled{0, reads}, err
		}
		time.Sleep(100 * time.Millisecond)
		var n int64
		n, err = c.read()
		reads++
		if err == nil && n-prev <= c.self {
			return settled{n, reads}, nil
		}
		prev = n
	}
	return settled{prev, reads}, fmt.Errorf("the server's total kept moving for 5 s")
}
