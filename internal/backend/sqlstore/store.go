// Package sqlstore is the lease store of the SQL engines, written once: a
// lease is a row of distlock_lease whose expiry the database's clock
// judges; the lease (renew, release, hold, handle, resume), inspect, list,
// slots and break, the fair polling acquire (a place in distlock_waiter),
// the run ledger (distlock_ledger) and the doctor's checks. Each engine (internal/backend/postgres,
// internal/backend/mysql) supplies a Dialect: its statements (its own
// .sql files, embedded in its package), how it reaches the database, how
// it names failures, and what it has that the other has not (PostgreSQL's
// LISTEN/NOTIFY wake-ups).
package sqlstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Row scans the current row of a result into dest.
type Row func(dest ...any) error

// Driver runs an engine's statements on its client library.
type Driver interface {
	// Exec runs an owner-checked update or delete and returns how many
	// rows it matched.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs query and calls each for every row it gives (of every
	// result set, for a multi-statement query).
	Query(ctx context.Context, query string, args []any, each func(Row) error) error
	// Acquire runs Queries.Acquire as one transaction, serialized with
	// the key's other acquirers, and calls each for its row.
	Acquire(ctx context.Context, query string, args []any, each func(Row) error) error
	// CreateSchema creates the tables (on first use).
	CreateSchema(ctx context.Context) error
	// IsUndefined: err says a table (or sequence) does not exist (yet).
	IsUndefined(err error) bool
	// Unavailable turns a failure into the one line that says what to do.
	Unavailable(err error) error
}

// Queries are an engine's statements, each given the arguments listed.
// "Holder columns" are owner, token, host, pid, username, command, note,
// acquired (a timestamp, or µs since 1970), ttl_ms, hold and the ms left
// (by the database's clock).
type Queries struct {
	// Acquire: prefix, key, owner, ttl_ms, limit, host, pid, user,
	// command, note, waiting (bool), place_ms. One row: the granted slot
	// and token (NULL when not granted), the limit in use when it is not
	// ours, the oldest live holder's columns, the ms until the soonest
	// live lease expires, the first live waiter ahead of us (host, pid).
	Acquire string
	// Renew: ttl_ms, prefix, key, slot, owner. Matches our live row.
	Renew string
	// Hold: ms, ms, mode, prefix, key, slot, owner. Matches our live row.
	Hold string
	// Release: prefix, key, slot, owner, Dialect.WakeArgs. Matches our row
	// only if it was still live.
	Release string
	// Resume: prefix, key, owner, token. Our live row's slot, limit, ttl_ms.
	Resume string
	// Leases: prefix, key. Every live lease of the key, the oldest (lowest
	// token) first: key, holder columns, limit, slot.
	Leases string
	// List: prefix, Dialect.KeyPattern(key prefix). Live leases by key,
	// then token (the oldest first): key, holder columns, limit, slot.
	List string
	// Break: prefix, key, token (0: any), Dialect.WakeArgs. The live
	// leases deleted, oldest first: key, holder columns, then
	// Dialect.BreakExtra columns.
	Break string
	// Leave: prefix, key, owner. A waiter's place given back.
	Leave string
	// QueueLen: prefix, key. The count of places in the key's line.
	QueueLen string
	// LeaseLeft: prefix, key, token. The µs left on that lease (<0 expired).
	LeaseLeft string
	// PutEntry: prefix, key, id, data. Creates or replaces that row of
	// the run ledger (ledger.go).
	PutEntry string
	// Entries: prefix, key. Every entry of the key's ledger: id, data.
	Entries string
	// DeleteEntries: prefix, key, Dialect.EntryIDs(ids). Deletes those.
	DeleteEntries string
}

// Dialect is what an engine tells the store.
type Dialect struct {
	Name   string // "postgres", "mysql": starts the store's own messages
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
	// BreakExtra is how many columns Break gives after the holder's.
	BreakExtra int
	// KeyPattern (optional) is List's argument for a key prefix (MySQL: a
	// LIKE pattern); the prefix itself when nil.
	KeyPattern func(keyPrefix string) string
	// EntryIDs (optional) is DeleteEntries' argument for a list of entry
	// ids (MySQL: one comma-separated string); the ids themselves (a
	// text array) when nil.
	EntryIDs    func(ids []string) any
	Clock       Clock
	Connections Connections
}

// Clock reads the server's clock, which judges every lease's expiry.
type Clock struct {
	Name string // as the doctor names it: "clock_timestamp()"
	Read func(ctx context.Context) (time.Time, error)
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
	if !s.d.Driver.IsUndefined(err) {
		return err
	}
	if err := s.d.Driver.CreateSchema(ctx); err != nil {
		return err
	}
	return op()
}

// unavailable is the Driver's one line for err, unless err is one already.
func (s *Store) unavailable(err error) error {
	var ue *lock.UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	return s.d.Driver.Unavailable(err)
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
