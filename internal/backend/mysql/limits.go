package mysql

import (
	"fmt"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/distlock/distlock/internal/lock"
)

// tooManyConnections is ER_CON_COUNT_ERROR: the server has as many
// connections as its max_connections allows.
const tooManyConnections = 1040

// tooManyConnections names the server's limit and how to raise it.
func (b *Backend) tooManyConnections(me *mysqldrv.MySQLError, err error) error {
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("mysql at %s has no connection left (%s, error 1040): its max_connections (151 by default) are all in use; raise it (SET GLOBAL max_connections = N, and in the server's config file), or run fewer distlock processes at once",
			b.addr, me.Message),
		Err: err,
	}
}
