package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/backend/sqlstore"
)

// driver runs the SQL store's statements with pgx (sqlstore.Driver).
type driver struct{ b *Backend }

// Exec implements sqlstore.Driver: the rows its command tag counts.
func (d driver) Exec(ctx context.Context, query string, args ...any) (n int64, err error) {
	err = d.b.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, query, args...)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// Query implements sqlstore.Driver.
func (d driver) Query(ctx context.Context, query string, args []any, each func(sqlstore.Row) error) error {
	return d.b.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		return eachRow(rows, each)
	})
}

// Acquire implements sqlstore.Driver: the key lock (keylock.sql, on args'
// prefix and key) and the acquire statement as one batch: one round
// trip, one implicit transaction, committed when the batch is closed.
func (d driver) Acquire(ctx context.Context, query string, args []any, each func(sqlstore.Row) error) error {
	return d.b.with(ctx, func(c *pgx.Conn) error {
		batch := &pgx.Batch{}
		batch.Queue(keyLockSQL, args[0], args[1])
		batch.Queue(query, args...)
		br := c.SendBatch(ctx, batch)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if err := eachRow(rows, each); err != nil {
			return err
		}
		return br.Close() // commits
	})
}

// eachRow hands every row to each, then closes rows.
func eachRow(rows pgx.Rows, each func(sqlstore.Row) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
