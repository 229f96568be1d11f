package mysql

import (
	"context"
	"strconv"
	"time"
)

// What distlock doctor reads of the server (the checks are the SQL
// store's): its clock, which judges every lease's expiry, and its
// connections.

// readClock reads SYSDATE(6).
func (b *Backend) readClock(ctx context.Context) (time.Time, error) {
	var s string
	if err := b.db.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP(SYSDATE(6))").Scan(&s); err != nil {
		return time.Time{}, err
	}
	secs, err := strconv.ParseFloat(s, 64)
	return time.Unix(0, int64(secs*1e9)), err
}

// connections reads Threads_connected (its own connection among them) and
// max_connections, on one connection.
func (b *Backend) connections(ctx context.Context) (setting string, used, limit int, err error) {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return "", 0, 0, err
	}
	defer conn.Close()
	var name, n string
	if err := conn.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&limit); err != nil {
		return "", 0, 0, err
	}
	if err := conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
		return "", 0, 0, err
	}
	used, err = strconv.Atoi(n)
	return "max_connections", used, limit, err
}
