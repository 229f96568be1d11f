package backend

import "github.com/distlock/distlock/internal/backend/mysql"

// mysqlEngine: the options' password is used when the URL has none.
var mysqlEngine = opens(Engine{
	Scheme: "mysql", Form: "mysql://USER@HOST:PORT/DB", Name: "MySQL/MariaDB",
	Guarantee: mysql.Guarantee, Caps: every,
	Lists:  "one query",
	Checks: "clock offset (the database's clock times the leases)",
}, mysql.ParseURL, mysql.New, func(cfg *mysql.Config, opts Options) {
	cfg.Password, cfg.Prefix, cfg.ConnectTimeout = opts.Password, opts.Prefix, opts.ConnectTimeout
})
