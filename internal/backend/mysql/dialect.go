package mysql

import (
	_ "embed"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/backend/sqlstore"
)

var (
	//go:embed schema.sql
	schemaSQL string
	//go:embed acquire.sql
	acquireSQL string
	//go:embed ledger_put.sql
	putEntrySQL string
	//go:embed ledger_entries.sql
	entriesSQL string
	//go:embed ledger_delete.sql
	deleteEntriesSQL string
)

// pollCap caps a waiter's backoff (MySQL has no notifications); a waiter
// steps (and so refreshes its place) at least this often.
const pollCap = 250 * time.Millisecond

// placeLasts is how long a waiter's place lasts without a refresh: many
// polls, so that only a waiter that is gone (or cut off) loses it.
const placeLasts = 2 * time.Second

// dialect is MySQL/MariaDB as the SQL store speaks it: database/sql
// (driver.go), its statements (queries.go, acquire.sql, ledger_*.sql); no
// notifications, so waiters only poll.
func (b *Backend) dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:       "mysql",
		Prefix:     b.prefix,
		Driver:     driver{b},
		SQL:        queries,
		PollCap:    pollCap,
		PlaceLasts: placeLasts,
		KeyPattern: likePrefix,
		EntryIDs:   func(ids []string) any { return strings.Join(ids, ",") },
		Clock:      sqlstore.Clock{Name: "SYSDATE(6)", Read: b.readClock},
		Connections: sqlstore.Connections{
			Reads: "max_connections and Threads_connected",
			Fix:   "raise it (SET GLOBAL max_connections = N, and in the server's config file)",
			Read:  b.connections,
		},
	}
}

// likePrefix is a LIKE pattern (escape character '!') matching what
// starts with p.
func likePrefix(p string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return r.Replace(p) + "%"
}
