// Package sqlstore is the lease store of the SQL engines, written once: a
// lease is a row of distlock_lease whose expiry the database's clock
// judges; the lease (renew, release, hold, handle, resume), inspect, list,
// slots and break, the fair polling acquire (a place in distlock_waiter),
// the run ledger (distlock_ledger), the schema created on first use, the
// doctor's checks and the one-line failures. Each engine
// (internal/backend/postgres, internal/backend/mysql) supplies a Dialect:
// its statements (its own .sql files, embedded in its package), how it
// reaches the database, what its errors mean, and what it has that the
// other has not (PostgreSQL's LISTEN/NOTIFY wake-ups).
package sqlstore

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"time"
)

// Row scans the current row of a result into dest.
type Row func(dest ...any) error

// Driver runs an engine's statements on its client library.
type Driver interface {
	// Exec runs a statement (or a script, given no arguments) and returns
	// how many rows it matched.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs query and calls each for every row it gives (of every
	// result set, for a multi-statement query).
	Query(ctx context.Context, query string, args []any, each func(Row) error) error
	// Acquire runs Queries.Acquire as one transaction, serialized with
	// the key's other acquirers, and calls each for its row.
	Acquire(ctx context.Context, query string, args []any, each func(Row) error) error
}

// Queries are an engine's statements, one .sql file each (ReadQueries).
// "Holder columns" are owner, token, host, pid, username, command, note,
// acquired (µs since 1970), ttl_ms, hold and the ms left (by the
// database's clock).
type Queries struct {
	Schema, Acquire, Renew, Hold, Release, Resume, Leases, List, Break,
	Leave, QueueLen, LeaseLeft, PutEntry, Entries, DeleteEntries, Clock string
}

// ReadQueries reads an engine's statements from fsys, <name>.sql each, as
// named below with the arguments the store gives them (each file's header
// says what it does and gives back). A file missing is a broken build: it
// panics.
func ReadQueries(fsys fs.FS) Queries {
	var q Queries
	for _, f := range []struct {
		name string
		to   *string
	}{
		{"schema", &q.Schema},               // none: creates what is missing
		{"acquire", &q.Acquire},             // prefix, key, owner, ttl_ms, limit, host, pid, user, command, note, waiting, place_ms
		{"renew", &q.Renew},                 // ttl_ms, prefix, key, slot, owner
		{"hold", &q.Hold},                   // ms, ms, mode, prefix, key, slot, owner
		{"release", &q.Release},             // prefix, key, slot, owner, WakeArgs
		{"resume", &q.Resume},               // prefix, key, owner, token: slot, limit, ttl_ms
		{"leases", &q.Leases},               // prefix, key: key, holder columns, limit, slot
		{"list", &q.List},                   // prefix, key prefix: the same, by key then token
		{"break", &q.Break},                 // prefix, key, token (0: any), WakeArgs: key, holder columns, limit, slot
		{"leave", &q.Leave},                 // prefix, key, owner
		{"queue_len", &q.QueueLen},          // prefix, key: a count
		{"lease_left", &q.LeaseLeft},        // prefix, key, token: µs left (<0 expired)
		{"ledger_put", &q.PutEntry},         // prefix, key, id, data
		{"ledger_entries", &q.Entries},      // prefix, key: id, data
		{"ledger_delete", &q.DeleteEntries}, // prefix, key, ids joined by commas
		{"clock", &q.Clock},                 // none: the server's clock in µs since 1970
	} {
		b, err := fs.ReadFile(fsys, f.name+".sql")
		if err != nil {
			panic(err)
		}
		*f.to = string(b)
	}
	return q
}

// Dialect is what an engine tells the store.
type Dialect struct {
	Name   string // "postgres", "mysql": starts the store's own messages
	Addr   string // host:port, for messages
	Prefix string // the namespace (--prefix)
	Driver Driver
	SQL    Queries
	// PollCap caps a waiter's backoff (a waiter steps, and so refreshes its
	// place, at least this often); PlaceLasts is how long a place lasts
	// without a refresh.
	PollCap, PlaceLasts time.Duration
	// Wake (optional) subscribes to the key's releases (lock.Polling.Wake).
	Wake func(ctx context.Context, key string) (<-chan struct{}, func(), error)
	// WakeArgs (optional) are Release's and Break's last arguments
	// (PostgreSQL: the key's NOTIFY channel).
	WakeArgs func(key string) []any
	// Classify says what an error of the engine is (failure.go).
	Classify func(err error) Failure
	// Grants says what to create and grant when the user may not use the
	// tables; TooMany why no connection is left and how to raise the
	// limit.
	Grants, TooMany string
	// ClockName is the clock Queries.Clock reads, as the doctor names it.
	ClockName   string
	Connections Connections
}

// Connections reads how many of the server's connections are in use.
type Connections struct {
	Reads string // what Read reads, for the doctor's warning
	Fix   string // how to raise the limit
	// Read returns the limit's setting (as the doctor names it), the
	// connections in use and the limit.
	Read func(ctx context.Context) (setting string, used, limit int, err error)
}

// Store is the engine-neutral half of an SQL engine. An engine's Backend
// embeds it and adds Guarantee and Close.
type Store struct {
	d Dialect
}

// ConnectTimeout is how long an SQL engine gives its database to answer
// when it connects: d, or 5s when d is not positive.
func ConnectTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return 5 * time.Second
	}
	return d
}

// New is a Store speaking d.
func New(d Dialect) *Store {
	return &Store{d: d}
}

// withSchema runs op, and once more after creating the schema if op failed
// because a table is missing ("created on first use").
func (s *Store) withSchema(ctx context.Context, op func() error) error {
	err := op()
	if !s.undefined(err) {
		return err
	}
	if _, err := s.d.Driver.Exec(ctx, s.d.SQL.Schema); err != nil {
		return s.Unavailable(err)
	}
	return op()
}

// undefined: err says a table (or sequence) does not exist (yet).
func (s *Store) undefined(err error) bool {
	return err != nil && s.d.Classify(err).Kind == Undefined
}

// errNoRows: a query that gives one row gave none.
var errNoRows = errors.New("sqlstore: no rows")

// queryRow runs query, which gives at most one row, into dest: errNoRows
// when it gave none.
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	found := false
	err := s.d.Driver.Query(ctx, query, args, func(scan Row) error {
		found = true
		return scan(dest...)
	})
	if err == nil && !found {
		return errNoRows
	}
	return err
}

// wakeArgs are args followed by the Dialect's WakeArgs for key.
func (s *Store) wakeArgs(key string, args ...any) []any {
	if s.d.WakeArgs != nil {
		args = append(args, s.d.WakeArgs(key)...)
	}
	return args
}

// FirstLine is s up to its first line break.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
