package mysql

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/distlock/distlock/internal/backend/sqlstore"
)

// queries are the statements the SQL store runs (sqlstore.ReadQueries).
// Times are µs since 1970 by the database's clock (the session's time
// zone is UTC, so there is no daylight-saving ambiguity).
var (
	//go:embed *.sql
	sqlFiles embed.FS
	queries  = sqlstore.ReadQueries(sqlFiles)
)

// dialect is MySQL/MariaDB as the SQL store speaks it: database/sql
// (driver.go), the statements of this package's .sql files; no
// notifications, so waiters only poll.
func (b *Backend) dialect(prefix, addr string) sqlstore.Dialect {
	return sqlstore.Dialect{
		Name: "mysql", Addr: addr, Prefix: prefix,
		Guarantee: "MySQL/MariaDB: exclusive while this database (its primary) lives and its clock runs true; leases expire by the database's clock, tokens come from a counter row",
		Driver:    driver{b},
		SQL:       queries,
		// A place lasts eight polls: only a waiter gone (or cut off) loses it.
		PollCap: 250 * time.Millisecond, PlaceLasts: 2 * time.Second,
		Classify:      classify,
		Grants:        "create distlock_token, distlock_lease, distlock_waiter and distlock_ledger once (README, MySQL), then grant distlock's user SELECT, INSERT, UPDATE, DELETE on them",
		TooMany:       "its max_connections (151 by default) are all in use; raise it (SET GLOBAL max_connections = N, and in the server's config file)",
		ClockName:     "SYSDATE(6)",
		Headroom:      b.connections,
		HeadroomReads: "max_connections and Threads_connected",
		HeadroomFix:   "raise it (SET GLOBAL max_connections = N, and in the server's config file)",
		// What a crash does to the grants (durability.sql, doctor.go).
		Durability:      durabilityVerdict,
		DurabilityReads: durabilityReads,
	}
}

// connections implements sqlstore.Dialect.Headroom: Threads_connected
// (its own connection among them) and max_connections, on one connection.
func (b *Backend) connections(ctx context.Context) (setting string, used, limit int, err error) {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return "", 0, 0, err
	}
	defer conn.Close()
	var name, n string
	if err := conn.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&limit); err != nil {
		return "", 0, 0, err
	}
	if err := conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
		return "", 0, 0, err
	}
	used, err = strconv.Atoi(n)
	return "max_connections", used, limit, err
}

// failures are the error numbers the store words on their own; any other
// is a ServerError.
var failures = map[uint16]sqlstore.Kind{
	1045: sqlstore.BadCredentials, 1044: sqlstore.BadCredentials,
	1049: sqlstore.NoDatabase,
	1142: sqlstore.NoPermission,
	1040: sqlstore.NoConnection, // ER_CON_COUNT_ERROR
	1146: sqlstore.Undefined,    // ER_NO_SUCH_TABLE
}

// classify implements sqlstore.Dialect.Classify. The driver's errors
// never hold the password.
func classify(err error) sqlstore.Failure {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return sqlstore.Failure{Kind: failures[me.Number], Msg: me.Message, Code: fmt.Sprintf("error %d", me.Number)}
	}
	var opErr *net.OpError
	return sqlstore.NoAnswer(err, errors.As(err, &opErr) && opErr.Timeout(), false)
}
