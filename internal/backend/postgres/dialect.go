package postgres

import (
	"embed"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/internal/backend/sqlstore"
)

var (
	// The statements the SQL store runs (sqlstore.ReadQueries), and
	// PostgreSQL's own: the key lock sent before acquire.sql (driver.go)
	// and the connection headroom (conn.go).
	//go:embed *.sql
	sqlFiles embed.FS
	queries  = sqlstore.ReadQueries(sqlFiles)
	//go:embed keylock.sql
	keyLockSQL string
	//go:embed headroom.sql
	headroomSQL string
)

// dialect is PostgreSQL as the SQL store speaks it: pgx (driver.go), the
// statements of this package's .sql files, NOTIFY on every release and
// break (notify.go); addr (host:port) names the server in messages.
func (b *Backend) dialect(addr string) sqlstore.Dialect {
	return sqlstore.Dialect{
		Name: "postgres", Addr: addr, Prefix: b.prefix,
		Guarantee: "PostgreSQL: exclusive while this database (its primary) lives and its clock runs true; leases expire by the database's clock, tokens follow it too",
		Driver:    driver{b},
		SQL:       queries,
		// A place lasts three polls: only a waiter gone (or cut off) loses it.
		PollCap: time.Second, PlaceLasts: 3 * time.Second,
		Wake:     b.notify,
		WakeArgs: func(key string) []any { return []any{b.channel(key)} },
		Classify: classify,
		Grants:   "create distlock_lease, distlock_waiter, distlock_key_token, distlock_ledger and distlock_token once as their owner (README, PostgreSQL), then grant distlock's user SELECT, INSERT, UPDATE, DELETE on the tables and USAGE on the sequence",
		// Each request of a distlock process needs a connection (for the
		// time of the request: conn.go), and a waiter one more, held, to
		// listen for releases while the server has room (notify.go).
		TooMany:       "its max_connections (100 by default) are all in use; raise max_connections in postgresql.conf and restart the server, put a pooler (PgBouncer, session mode) in front",
		ClockName:     "clock_timestamp()",
		Headroom:      b.connections,
		HeadroomReads: "max_connections and pg_stat_activity",
		HeadroomFix:   "raise max_connections in postgresql.conf and restart the server, or put a pooler (PgBouncer, session mode) in front",
		// What a crash does to the grants (durability.sql, doctor.go).
		Durability:      durabilityVerdict,
		DurabilityReads: durabilityReads,
	}
}

// failures are the SQLSTATEs the store words on their own; any other is
// a ServerError.
var failures = map[string]sqlstore.Kind{
	"28P01": sqlstore.BadCredentials, "28000": sqlstore.BadCredentials,
	"3D000": sqlstore.NoDatabase,
	"42501": sqlstore.NoPermission,
	"53300": sqlstore.NoConnection,                           // too many clients, or the slots left are reserved
	"42P01": sqlstore.Undefined, "42704": sqlstore.Undefined, // a table, the sequence
}

// classify implements sqlstore.Dialect.Classify. pgx's errors never hold
// the password; only the innermost cause is kept, without the connection
// string.
func classify(err error) sqlstore.Failure {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return sqlstore.Failure{Kind: failures[pgErr.Code], Msg: pgErr.Message, Code: "SQLSTATE " + pgErr.Code}
	}
	return sqlstore.NoAnswer(err, pgconn.Timeout(err), true)
}
