package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/internal/lock"
)

// tooManyClients is SQLSTATE 53300: the server has no connection slot
// left ("sorry, too many clients already", or "remaining connection slots
// are reserved" for roles without them).
const tooManyClients = "53300"

// tooManyClients names the server's limit and how to raise it. Each
// request of a distlock process needs a connection (for the time of the
// request: conn.go), and a waiter one more, held, to listen for releases
// while the server has room (notify.go). It is a transient failure: a
// renewal that meets it is tried again while the lease lasts, a waiter
// keeps waiting.
func (b *Backend) tooManyClients(pgErr *pgconn.PgError, err error) error {
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("postgres at %s has no connection left (%s, SQLSTATE 53300): its max_connections (100 by default) are all in use; raise max_connections in postgresql.conf and restart the server, put a pooler (PgBouncer, session mode) in front, or run fewer distlock processes at once",
			b.addr, pgErr.Message),
		Err: err,
	}
}
