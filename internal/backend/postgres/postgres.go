// Package postgres is the PostgreSQL engine: a lease is a row of the table
// distlock_lease (schema.sql, created on first use when missing) whose
// expires_at is set and judged by the database's clock, never the
// client's; the fencing token is max(the key's last token + 1, the
// database's clock in µs) (lock.NextToken), kept in distlock_key_token by
// the statement that grants; releases and breaks NOTIFY a channel per key
// so that waiters wake at once, with jittered polling as the fallback.
//
// It uses pgx v5 (github.com/jackc/pgx/v5): every call honours its
// context by closing the connection at the deadline (so a renewal against
// a silent server returns in time, which the renew keeper relies on), it
// speaks LISTEN/NOTIFY on a plain connection, and it sends a batch of
// statements in one round trip and one implicit transaction. distlock
// keeps no pool: each request opens a connection and closes it (conn.go),
// so a holder holds none between renewals; only a waiter's LISTEN stays
// open while it waits.
package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/internal/backend/sqlstore"
	"github.com/distlock/distlock/internal/backend/urlx"
)

// Config is what New needs: pgx's connection settings parsed from the
// URL plus distlock's own settings.
type Config struct {
	Conn *pgx.ConnConfig
	sqlstore.Settings
}

// String names the server and database and shows none of the config's
// passwords (Password, and pgx's own), so that no %v of a Config can
// print one.
func (c Config) String() string {
	return fmt.Sprintf("postgres at %s:%d/%s (prefix %q)", c.Conn.Host, c.Conn.Port, c.Conn.Database, c.Prefix)
}

// ParseURL parses postgres:// and postgresql:// URLs with pgx's parser:
//
//	postgres://user[:password]@host[:port][,host[:port]...]/database[?sslmode=disable&...]
//
// Query parameters are libpq's (sslmode, sslrootcert, sslcert, sslkey,
// search_path, ...); unset ones fall back to the PG* environment
// variables, as with psql. pgxpool's parser, so that its pool_*
// parameters are still accepted (and ignored: distlock keeps no pool).
// Errors are lock.ErrInvalid and never hold the user name or password
// (urlx.ParseBy, reading as libpq does: urlx.LibPQ).
func ParseURL(raw string) (Config, error) {
	pc, err := urlx.ParseBy(urlx.LibPQ, raw, "postgres", "postgres://user[:password]@host:port/database?sslmode=disable", parse)
	if err != nil {
		return Config{}, err
	}
	return Config{Conn: pc.ConnConfig}, nil
}

// parse is pgxpool's parser, its error without the connection string
// around it ("cannot parse it" when it says nothing else).
func parse(raw string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(raw)
	if pe := (*pgconn.ParseConfigError)(nil); errors.As(err, &pe) {
		err = cmp.Or(pe.Unwrap(), errors.New("cannot parse it"))
	}
	return pc, err
}

// Backend is one PostgreSQL database: the SQL engines' store
// (internal/backend/sqlstore) speaking PostgreSQL (dialect.go). It keeps
// no connection open: every request connects (conn.go).
type Backend struct {
	*sqlstore.Store
	connCfg *pgx.ConnConfig
	prefix  string
	timeout time.Duration
	// listenAfter (unix ns): a waiter polls without trying to LISTEN
	// until then (notify.go).
	listenAfter atomic.Int64
}

// New checks that the database answers within cfg.ConnectTimeout (5s
// when zero), on a connection it closes again. The schema is not touched
// until first use.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	cc := cfg.Conn.Copy()
	cc.Password = cmp.Or(cc.Password, cfg.Password)
	timeout := cmp.Or(cfg.ConnectTimeout, 5*time.Second)
	cc.ConnectTimeout = timeout
	// One round trip per statement, no prepare: every distlock process
	// makes only a handful of calls, each on a new connection. Parameter
	// types follow the Go types.
	cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	// That mode uses neither of pgx's statement caches, which it would
	// allocate (512 entries each) for every connection: every request.
	cc.StatementCacheCapacity, cc.DescriptionCacheCapacity = 0, 0
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "distlock"
	}
	// The acquire statement's ON CONFLICT relies on READ COMMITTED, whatever
	// the database's default.
	cc.RuntimeParams["default_transaction_isolation"] = "read committed"
	b := &Backend{
		connCfg: cc,
		prefix:  cmp.Or(cfg.Prefix, "distlock"),
		timeout: timeout,
	}
	b.Store = sqlstore.New(b.dialect(net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))))
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := b.with(pctx, func(c *pgx.Conn) error { return c.Ping(pctx) }); err != nil {
		return nil, b.Unavailable(err)
	}
	return b, nil
}

// Close implements lock.Backend: there is no connection to close, each
// request closed its own.
func (b *Backend) Close() error { return nil }
