package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/internal/testenv/server"
)

// TestConnectionLimits runs testdata/limits/<engine>.txtar against a real
// server whose connection limit is already reached (issue 25): distlock
// must say which server setting ran out, in one line, and exit 69.
func TestConnectionLimits(t *testing.T) {
	for name, fill := range map[string]func(*testscript.Env) (string, error){
		"zookeeper": fillZooKeeper, "postgres": fillPostgres, "mariadb": fillMariaDB,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testscript.Run(t, testscript.Params{
				Files:               []string{filepath.Join("testdata", "limits", name+".txtar")},
				RequireExplicitExec: true,
				Setup: func(env *testscript.Env) error {
					isolateTmp(env)
					url, err := fill(env)
					if errors.Is(err, server.ErrNoBinary) && !requireServers() {
						env.T().Skip(err)
					}
					if err != nil {
						return err
					}
					env.Setenv("DISTLOCK_BACKEND", url)
					return nil
				},
			})
		})
	}
}

// started runs start, and closes the server it started when the script
// ends.
func started(env *testscript.Env, start func(string, int) (*server.Process, error), dir string, limit int) (*server.Process, error) {
	p, err := start(filepath.Join(env.WorkDir, dir), limit)
	if err == nil {
		env.Defer(func() { p.Close() })
	}
	return p, err
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// fillZooKeeper: maxClientCnxns 1, taken by a session of ours.
func fillZooKeeper(env *testscript.Env) (string, error) {
	p, err := started(env, server.StartZooKeeperMaxClientCnxns, ".zk", 1)
	if err != nil {
		return "", err
	}
	c, events, err := zk.Connect([]string{p.Addr()}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return "", err
	}
	env.Defer(c.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return "zk://" + p.Addr(), nil
			}
		case <-deadline:
			return "", fmt.Errorf("no ZooKeeper session on %s", p.Addr())
		}
	}
}

// fillPostgres: max_connections 4 (3 reserved for superusers, which we
// are), all taken.
func fillPostgres(env *testscript.Env) (string, error) {
	p, err := started(env, server.StartPostgresMaxConnections, ".pg", 4)
	if err != nil {
		return "", err
	}
	url := "postgres://" + server.PostgresUser + "@" + p.Addr() + "/postgres?sslmode=disable"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 4 {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return "", err
		}
		env.Defer(func() { c.Close(context.Background()) })
	}
	return url, nil
}

// fillMariaDB: max_connections 10 (MariaDB's least) and the one more a
// SUPER user gets, all taken.
func fillMariaDB(env *testscript.Env) (string, error) {
	p, err := started(env, server.StartMariaDBMaxConnections, ".my", 10)
	if err != nil {
		return "", err
	}
	cfg := mysqldrv.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = server.MariaDBUser, "tcp", p.Addr()
	connector, err := mysqldrv.NewConnector(cfg)
	if err != nil {
		return "", err
	}
	db := sql.OpenDB(connector)
	env.Defer(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 20 {
		c, err := db.Conn(ctx)
		var me *mysqldrv.MySQLError
		if errors.As(err, &me) && me.Number == 1040 {
			return "mysql://" + server.MariaDBUser + "@" + p.Addr() + "/" + server.MariaDBDatabase, nil
		}
		if err != nil {
			return "", err
		}
		env.Defer(func() { c.Close() })
	}
	return "", errors.New("mariadb took 20 connections: its max_connections is not 10")
}
