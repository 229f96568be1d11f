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
	"reflect"
	"time"

	"github.com/distlock/distlock/internal/lock"
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

// Queries are an engine's statements, one .sql file each, named by the
// field's tag, with the arguments the store gives them (ReadQueries; each
// file's header says what it does and gives back). "Holder columns" are
// owner, token, host, pid, username, command, note, acquired (µs since
// 1970), ttl_ms, hold and the ms left (by the database's clock).
type Queries struct {
	Schema        string `sql:"schema"`         // none: creates what is missing
	Acquire       string `sql:"acquire"`        // prefix, key, owner, ttl_ms, limit, host, pid, user, command, note, waiting, place_ms
	Renew         string `sql:"renew"`          // ttl_ms, prefix, key, slot, owner
	Hold          string `sql:"hold"`           // ms, ms, mode, prefix, key, slot, owner
	Release       string `sql:"release"`        // prefix, key, slot, owner, WakeArgs
	Resume        string `sql:"resume"`         // prefix, key, owner, token: slot, limit, ttl_ms
	Leases        string `sql:"leases"`         // prefix, key: key, holder columns, limit, slot
	List          string `sql:"list"`           // prefix, key prefix: the same, by key then token
	Break         string `sql:"break"`          // prefix, key, token (0: any), WakeArgs: key, holder columns, limit, slot
	Leave         string `sql:"leave"`          // prefix, key, owner
	QueueLen      string `sql:"queue_len"`      // prefix, key: a count
	LeaseLeft     string `sql:"lease_left"`     // prefix, key, token: µs left (<0 expired)
	PutEntry      string `sql:"ledger_put"`     // prefix, key, id, data
	Entries       string `sql:"ledger_entries"` // prefix, key: id, data
	DeleteEntries string `sql:"ledger_delete"`  // prefix, key, ids joined by commas
	Clock         string `sql:"clock"`          // none: the server's clock in µs since 1970
	Durability    string `sql:"durability"`     // none: setting, value: what decides whether a commit survives a crash
}

// ReadQueries reads every statement of Queries from fsys. A file missing
// is a broken build: it panics.
func ReadQueries(fsys fs.FS) Queries {
	var q Queries
	v := reflect.ValueOf(&q).Elem()
	for i := range v.NumField() {
		b, err := fs.ReadFile(fsys, v.Type().Field(i).Tag.Get("sql")+".sql")
		if err != nil {
			panic(err)
		}
		v.Field(i).SetString(string(b))
	}
	return q
}

// Dialect is what an engine tells the store.
type Dialect struct {
	Name string // "postgres", "mysql": starts the store's own messages
	// Guarantee is what the engine promises, in one line (lock.Backend).
	Guarantee string
	Addr      string // host:port, for messages
	Prefix    string // the namespace (--prefix)
	Driver    Driver
	SQL       Queries
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
	ClockName string
	// Headroom returns the connection limit's setting (as the doctor
	// names it), the connections in use and the limit; HeadroomReads is
	// what it reads and HeadroomFix how to raise the limit, for the
	// doctor.
	Headroom                   func(ctx context.Context) (setting string, used, limit int, err error)
	HeadroomReads, HeadroomFix string
	// Durability judges the settings Queries.Durability read (name to
	// value): whether a grant the server committed survives a crash of
	// the server, or a failover, for the doctor; DurabilityReads names
	// them.
	Durability      func(settings map[string]string) lock.Check
	DurabilityReads string
}

// Settings are distlock's own settings of an SQL engine, which its Config
// adds to its client library's.
type Settings struct {
	Password       string // used when the URL (on PostgreSQL: PGPASSWORD, ~/.pgpass too) gave none
	Prefix         string
	ConnectTimeout time.Duration
}

// Store is the engine-neutral half of an SQL engine. An engine's Backend
// embeds it and adds Close.
type Store struct {
	d Dialect
}

// New is a Store speaking d.
func New(d Dialect) *Store {
	return &Store{d: d}
}

// Guarantee implements lock.Backend.
func (s *Store) Guarantee() string { return s.d.Guarantee }

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

// unlessUndefined is err as Unavailable words it; nil when a table does not
// exist yet (a read finds nothing there, a delete has nothing to delete).
func (s *Store) unlessUndefined(err error) error {
	if err == nil || s.undefined(err) {
		return nil
	}
	return s.Unavailable(err)
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
