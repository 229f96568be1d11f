package backend

import (
	"context"

	"github.com/distlock/distlock/internal/backend/postgres"
	"github.com/distlock/distlock/internal/lock"
)

var postgresEngine = Engine{
	Scheme: "postgres", Aliases: []string{"postgresql"}, Form: "postgres://USER@HOST:PORT/DB", Name: "PostgreSQL",
	Guarantee: postgres.Guarantee,
	Caps:      Caps{Semaphore: true, Fair: true, Holds: true, Doctor: true},
	Lists:     "one query",
	Checks:    "clock offset (the database's clock times the leases)",
	open:      openPostgres,
	kind:      (*postgres.Backend)(nil),
}

// openPostgres opens postgres:// (postgresql://); the options' password
// is used when the URL, PGPASSWORD and ~/.pgpass give none.
func openPostgres(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
	cfg, err := postgres.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.Password = opts.Password
	cfg.Prefix = opts.Prefix
	cfg.ConnectTimeout = opts.ConnectTimeout
	return postgres.New(ctx, cfg)
}
