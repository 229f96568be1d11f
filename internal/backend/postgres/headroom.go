package postgres

import (
	"context"

	"github.com/distlock/distlock/internal/lock"
)

// headroomQuery is the server's connection limit for distlock's role
// (superusers may use the slots reserved for them too) and the client
// connections in use.
const headroomQuery = `SELECT current_setting('max_connections')::int,
	current_setting('superuser_reserved_connections')::int,
	(SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
	(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int`

// headroomCheck compares the client connections in use with
// max_connections (less the reserved slots for a role that cannot use
// them).
func (b *Backend) headroomCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	cctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	var limit, reserved, used int
	var super bool
	if err := b.pool.QueryRow(cctx, headroomQuery).Scan(&limit, &reserved, &super, &used); err != nil {
		return lock.Check{Name: "connections", Status: lock.CheckWarning,
			Detail: "cannot read max_connections and pg_stat_activity: " + firstLine(err.Error()),
			Fix:    "run doctor again once the server answers"}
	}
	setting := "max_connections"
	if !super {
		limit -= reserved
		setting = "max_connections less superuser_reserved_connections"
	}
	return lock.ConnectionHeadroomCheck(setting, used, limit,
		"raise max_connections in postgresql.conf and restart the server, or put a pooler (PgBouncer, session mode) in front")
}
