package mysql

import (
	"context"
	"strconv"

	"github.com/distlock/distlock/internal/lock"
)

// headroomCheck compares Threads_connected with max_connections.
func (b *Backend) headroomCheck(ctx context.Context, req lock.DoctorRequest) lock.Check {
	cctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	var limit int
	var name, used string
	err := b.db.QueryRowContext(cctx, "SELECT @@max_connections").Scan(&limit)
	if err == nil {
		err = b.db.QueryRowContext(cctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &used)
	}
	n, cerr := strconv.Atoi(used)
	if err != nil || cerr != nil {
		return lock.Check{Name: "connections", Status: lock.CheckWarning,
			Detail: "cannot read max_connections and Threads_connected: " + firstLine(errText(err, cerr)),
			Fix:    "run doctor again once the server answers"}
	}
	return lock.ConnectionHeadroomCheck("max_connections", n, limit,
		"raise it (SET GLOBAL max_connections = N, and in the server's config file)")
}

func errText(errs ...error) string {
	for _, err := range errs {
		if err != nil {
			return err.Error()
		}
	}
	return ""
}
