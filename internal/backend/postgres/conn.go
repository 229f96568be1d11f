package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// with runs op on a connection of its own, opened for it and closed once
// op returns: a holder holds no connection between its renewals, so the
// server's max_connections bounds the requests in flight, not the locks
// held (issue 25). Connecting costs a backend fork (about 3 ms on
// loopback, against 0.07 ms for a query on an open connection): cheap at
// one renewal per ttl/3. The connect is part of the request, bounded by
// ctx like the rest: a renewal's validity counts from before it.
func (b *Backend) with(ctx context.Context, op func(*pgx.Conn) error) error {
	conn, err := pgx.ConnectConfig(ctx, b.connCfg)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	return op(conn)
}

// closeConn says goodbye to the server and closes conn, in at most
// 100ms: the goodbye is a courtesy, and the server may be silent. A
// connection whose request was cut short by its context is closed
// already (pgx cancels the request in the background).
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = conn.PgConn().Conn().SetDeadline(time.Now().Add(100 * time.Millisecond))
	_ = conn.Close(ctx)
}

// connections implements sqlstore.Dialect.Headroom.
func (b *Backend) connections(ctx context.Context) (setting string, used, limit int, err error) {
	err = b.with(ctx, func(c *pgx.Conn) error {
		setting, used, limit, err = headroom(ctx, c)
		return err
	})
	return setting, used, limit, err
}

// headroom reads, on c, the connection limit for distlock's role, as the
// doctor names it, and the connections in use, c's own among them
// (headroom.sql).
func headroom(ctx context.Context, c *pgx.Conn) (setting string, used, limit int, err error) {
	err = c.QueryRow(ctx, headroomSQL).Scan(&setting, &used, &limit)
	return setting, used, limit, err
}
