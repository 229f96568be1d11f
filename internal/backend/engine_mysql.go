package backend

import (
	"context"

	"github.com/distlock/distlock/internal/backend/mysql"
	"github.com/distlock/distlock/internal/lock"
)

var mysqlEngine = Engine{
	Scheme: "mysql", Form: "mysql://USER@HOST:PORT/DB", Name: "MySQL/MariaDB",
	Guarantee: mysql.Guarantee,
	Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
	Lists:     "one query",
	Checks:    "clock offset (the database's clock times the leases)",
	open:      openMySQL,
	kind:      (*mysql.Backend)(nil),
}

// openMySQL opens mysql://; the options' password is used when the URL
// has none.
func openMySQL(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	cfg, err := mysql.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.Password = opts.Password
	cfg.Prefix = opts.Prefix
	cfg.ConnectTimeout = opts.ConnectTimeout
	return mysql.New(ctx, cfg)
}
