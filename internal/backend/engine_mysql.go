package backend

import "github.com/distlock/distlock/internal/backend/mysql"

// mysqlEngine: the options' password is used when the URL has none.
var mysqlEngine = opens(Engine{
	Scheme: "mysql", Form: "mysql://USER@HOST:PORT/DB", Name: "MySQL/MariaDB",
	Guarantee: mysql.Guarantee, Caps: every, Lists: "one query", Checks: sqlChecks,
}, mysql.ParseURL, mysql.New, func(c *mysql.Config) settings {
	return settings{secret: &c.Password, prefix: &c.Prefix, timeout: &c.ConnectTimeout}
})
