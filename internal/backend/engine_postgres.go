package backend

import "github.com/distlock/distlock/internal/backend/postgres"

// postgresEngine: the options' password is used when the URL, PGPASSWORD
// and ~/.pgpass give none.
var postgresEngine = opens(Engine{
	Scheme: "postgres", Aliases: []string{"postgresql"}, Form: "postgres://USER@HOST:PORT/DB", Name: "PostgreSQL",
	Guarantee: postgres.Guarantee, Caps: every,
	Lists:  "one query",
	Checks: "clock offset (the database's clock times the leases)",
}, postgres.ParseURL, postgres.New, func(cfg *postgres.Config, opts Options) {
	cfg.Password, cfg.Prefix, cfg.ConnectTimeout = opts.Password, opts.Prefix, opts.ConnectTimeout
})
