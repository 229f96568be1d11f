package mysql

import (
	"context"
	sqldriver "database/sql/driver"

	"github.com/distlock/distlock/internal/backend/sqlstore"
)

// driver runs the SQL store's statements through database/sql
// (sqlstore.Driver).
type driver struct{ b *Backend }

// Exec implements sqlstore.Driver: the rows matched (ClientFoundRows), so
// that a renewal in the same microsecond still counts. A script
// (schema.sql) is one multi-statement query.
func (d driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := d.b.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, nil // no count: not ours, as far as anyone can tell
	}
	return n, nil
}

// Acquire implements sqlstore.Driver: acquire.sql is one multi-statement
// transaction, serialized by the counter row distlock_token.
func (d driver) Acquire(ctx context.Context, query string, args []any, each func(sqlstore.Row) error) error {
	return d.Query(ctx, query, args, each)
}

// Query implements sqlstore.Driver: every query runs as a multi-statement
// one (break is a transaction of several statements), on a connection of
// its own, and each gets the rows of every result set that has columns.
// If anything fails, the connection is thrown away, never returned to the
// pool: a transaction left open by a statement that failed half-way would
// hold its locks (the server rolls it back when the connection closes).
func (d driver) Query(ctx context.Context, query string, args []any, each func(sqlstore.Row) error) (err error) {
	conn, err := d.b.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		}
		conn.Close()
	}()
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if cols, _ := rows.Columns(); len(cols) > 0 {
			for rows.Next() {
				if err := each(rows.Scan); err != nil {
					return err
				}
			}
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}
