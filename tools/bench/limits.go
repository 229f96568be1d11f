package main

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/internal/testenv/server"
)

// serverLimits is each server's connection limit as the server itself
// reports it, for the scale table's header.
func serverLimits(engines []engine) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	for _, e := range engines {
		if e.proc == nil {
			continue
		}
		var v string
		var err error
		switch e.name {
		case "zookeeper":
			v, err = zkLimit(ctx, e.proc.Addr())
		case "postgres":
			v, err = pgLimit(ctx, e.url)
		case "mariadb":
			v, err = myLimit(ctx, e.proc.Addr())
		default:
			continue
		}
		if err != nil {
			v = "unknown: " + err.Error()
		}
		out[e.name] = v
	}
	return out
}

// zkLimit is maxClientCnxns from the conf four-letter word.
func zkLimit(ctx context.Context, addr string) (string, error) {
	conf, err := server.FourLetterWord(ctx, addr, "conf")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(conf, "\n") {
		if strings.HasPrefix(line, "maxClientCnxns=") {
			return strings.TrimSpace(line) + " (per client IP)", nil
		}
	}
	return "maxClientCnxns not in conf", nil
}

func pgLimit(ctx context.Context, url string) (string, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var v string
	err = c.QueryRow(ctx, "SHOW max_connections").Scan(&v)
	return "max_connections=" + v, err
}

func myLimit(ctx context.Context, addr string) (string, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = server.MariaDBUser, "tcp", addr
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return "", err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var v string
	err = db.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&v)
	return "max_connections=" + v, err
}
