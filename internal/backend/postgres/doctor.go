package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// What distlock doctor reads of the server (the checks are the SQL
// store's): its clock, which judges every lease's expiry, and its
// connections.

// readClock reads clock_timestamp().
func (b *Backend) readClock(ctx context.Context) (time.Time, error) {
	var server time.Time
	err := b.with(ctx, func(c *pgx.Conn) error { return c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&server) })
	return server, err
}

// connections compares the client connections in use with
// max_connections, less the reserved slots for a role that cannot use
// them.
func (b *Backend) connections(ctx context.Context) (setting string, used, limit int, err error) {
	err = b.with(ctx, func(c *pgx.Conn) error {
		setting, used, limit, err = headroom(ctx, c)
		return err
	})
	return setting, used, limit, err
}

// headroom reads, on c, the connections in use (c's own among them) and
// the limit for distlock's role (headroom.sql).
func headroom(ctx context.Context, c *pgx.Conn) (setting string, used, limit int, err error) {
	var reserved int
	var super bool
	if err := c.QueryRow(ctx, headroomSQL).Scan(&limit, &reserved, &super, &used); err != nil {
		return "", 0, 0, err
	}
	if super {
		return "max_connections", used, limit, nil
	}
	return "max_connections less superuser_reserved_connections", used, limit - reserved, nil
}
