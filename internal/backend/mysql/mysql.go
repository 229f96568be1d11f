// Package mysql is the MySQL/MariaDB engine: a lease is a row of the table
// distlock_lease (schema.sql, created on first use when missing) whose
// expiry is set and judged by the database's clock, never the client's;
// the fencing token comes from a counter row updated in the acquiring
// transaction. Acquiring is one multi-statement query: one round trip and
// one transaction that the server runs to its COMMIT without waiting for
// the client, so a client that stalls half-way holds no lock on the
// server. Waiting is a jittered poll bounded by the soonest expiry of the
// holders' leases: MySQL has no notifications.
//
// It uses github.com/go-sql-driver/mysql through database/sql: every call
// honours its context (the driver closes the connection when the context
// ends). The pool keeps no idle connection: each request connects, and
// its connection is closed when it is done.
package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/distlock/distlock/internal/backend/sqlstore"
	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// Config is what New needs: the driver's configuration parsed from the
// URL plus distlock's own settings.
type Config struct {
	Driver *mysqldrv.Config
	sqlstore.Settings
}

// String names the server and database and shows none of the config's
// passwords (Password, and the driver's own), so that no %v of a Config
// can print one.
func (c Config) String() string {
	return fmt.Sprintf("mysql at %s/%s (prefix %q)", c.Driver.Addr, c.Driver.DBName, c.Prefix)
}

// ParseURL parses
//
//	mysql://user[:password]@host[:port]/database[?tls=true|skip-verify|preferred&...]
//
// (MariaDB too). Query parameters are the driver's DSN parameters. Errors
// are lock.ErrInvalid and never hold the user name or password (urlx's
// rule: urlx.ParseBy; the driver's DSN, whose errors may
// quote it, is made of the host, database and query alone).
func ParseURL(raw string) (Config, error) {
	const form = "mysql://user[:password]@host:port/database"
	u, err := urlx.ParseBy(urlx.NetURL, raw, "mysql", form, url.Parse)
	if err != nil {
		return Config{}, err
	}
	if !strings.EqualFold(u.Scheme, "mysql") || u.Host == "" {
		return Config{}, lock.Invalidf("mysql URL needs a host: expected %s", form)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return Config{}, lock.Invalidf("mysql URL needs one database: expected %s", form)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	dsn := "tcp(" + host + ")/" + db
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return Config{}, lock.Invalidf("mysql URL is malformed: %v (expected %s)", err, form)
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	return Config{Driver: cfg}, nil
}

// Backend is one MySQL or MariaDB database: the SQL engines' store
// (internal/backend/sqlstore) speaking MySQL (dialect.go).
type Backend struct {
	*sqlstore.Store
	db *sql.DB
}

// New connects and checks that the database answers within
// cfg.ConnectTimeout (5s when zero). The schema is not touched until
// first use.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	c := cfg.Driver.Clone()
	c.Passwd = cmp.Or(c.Passwd, cfg.Password)
	timeout := cmp.Or(cfg.ConnectTimeout, 5*time.Second)
	c.Timeout = timeout
	// Statements are filled in by the driver (escaped), so that a whole
	// transaction travels as one multi-statement query.
	c.InterpolateParams = true
	c.MultiStatements = true
	// Rows matched, not rows changed: a renewal in the same microsecond
	// still counts.
	c.ClientFoundRows = true
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	c.Params["time_zone"] = "'+00:00'"
	c.Logger = log.New(io.Discard, "", 0) // distlock reports its failures itself
	b := &Backend{}
	b.Store = sqlstore.New(b.dialect(cmp.Or(cfg.Prefix, "distlock"), c.Addr))
	connector, err := mysqldrv.NewConnector(c)
	if err != nil {
		return nil, lock.Invalidf("mysql URL: %v", err)
	}
	b.db = sql.OpenDB(connector)
	// No idle connections: each request's connection is closed once the
	// request is done, so a holder holds none between its renewals and
	// the server's max_connections bounds the requests in flight, not the
	// locks held (issue 25).
	b.db.SetMaxOpenConns(4)
	b.db.SetMaxIdleConns(0)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := b.db.PingContext(pctx); err != nil {
		b.db.Close()
		return nil, b.Unavailable(err)
	}
	return b, nil
}

// Close implements lock.Backend.
func (b *Backend) Close() error { return b.db.Close() }
