package backend

import "github.com/distlock/distlock/internal/backend/postgres"

// postgresEngine: the options' password is used when the URL, PGPASSWORD
// and ~/.pgpass give none.
var postgresEngine = opens(Engine{
	Scheme: "postgres", Aliases: []string{"postgresql"}, Form: "postgres://USER@HOST:PORT/DB", Name: "PostgreSQL",
	Guarantee: postgres.Guarantee, Caps: every, Lists: "one query", Checks: sqlChecks,
}, postgres.ParseURL, postgres.New, func(c *postgres.Config) settings {
	return settings{secret: &c.Password, prefix: &c.Prefix, timeout: &c.ConnectTimeout}
})

// sqlChecks are the SQL engines' doctor checks (internal/backend/sqlstore).
const sqlChecks = "clock offset (the database's clock times the leases)"
