package postgres

import (
	_ "embed"
	"time"

	"github.com/distlock/distlock/internal/backend/sqlstore"
)

var (
	//go:embed schema.sql
	schemaSQL string
	//go:embed keylock.sql
	keyLockSQL string
	//go:embed acquire.sql
	acquireSQL string
	//go:embed renew.sql
	renewSQL string
	//go:embed hold.sql
	holdSQL string
	//go:embed release.sql
	releaseSQL string
	//go:embed resume.sql
	resumeSQL string
	//go:embed leases.sql
	leasesSQL string
	//go:embed list.sql
	listSQL string
	//go:embed break.sql
	breakSQL string
	//go:embed leave.sql
	leaveLineSQL string
	//go:embed headroom.sql
	headroomSQL string
	//go:embed ledger_put.sql
	putEntrySQL string
	//go:embed ledger_entries.sql
	entriesSQL string
	//go:embed ledger_delete.sql
	deleteEntriesSQL string
)

// pollCap caps a waiter's backoff; a waiter steps (and so refreshes its
// place) at least this often.
const pollCap = time.Second

// placeLasts is how long a waiter's place lasts without a refresh: many
// polls, so that only a waiter that is gone (or cut off) loses it.
const placeLasts = 3 * pollCap

// dialect is PostgreSQL as the SQL store speaks it: pgx (driver.go), the
// statements of this package's .sql files, NOTIFY on every release and
// break (notify.go).
func (b *Backend) dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:   "postgres",
		Prefix: b.prefix,
		Driver: driver{b},
		SQL: sqlstore.Queries{
			Acquire:       acquireSQL,
			Renew:         renewSQL,
			Hold:          holdSQL,
			Release:       releaseSQL,
			Resume:        resumeSQL,
			Leases:        leasesSQL,
			List:          listSQL,
			Break:         breakSQL,
			Leave:         leaveLineSQL,
			QueueLen:      "SELECT count(*) FROM distlock_waiter WHERE prefix = $1 AND lock_key = $2",
			LeaseLeft:     "SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint FROM distlock_lease WHERE prefix = $1 AND lock_key = $2 AND token = $3",
			PutEntry:      putEntrySQL,
			Entries:       entriesSQL,
			DeleteEntries: deleteEntriesSQL,
		},
		PollCap:    pollCap,
		PlaceLasts: placeLasts,
		Wake:       b.notify,
		WakeArgs:   func(key string) []any { return []any{b.channel(key)} },
		BreakExtra: 1, // pg_notify's
		Clock:      sqlstore.Clock{Name: "clock_timestamp()", Read: b.readClock},
		Connections: sqlstore.Connections{
			Reads: "max_connections and pg_stat_activity",
			Fix:   "raise max_connections in postgresql.conf and restart the server, or put a pooler (PgBouncer, session mode) in front",
			Read:  b.connections,
		},
	}
}
