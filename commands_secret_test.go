package main

import (
	"context"
	"database/sql"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/distlock/distlock/internal/testenv/server"

	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"
)

// enginepassword PW: make the script's engine refuse clients without PW
// where a password alone is enough to log in (Redis: requirepass), so that
// a run that works proves distlock used the password it was given. The
// file engine has no password, and etcd uses one only with a user name in
// the URL: there distlock is given PW and ignores it.
func cmdEnginePassword(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || args[0] == "" {
		ts.Fatalf("usage: enginepassword PW")
	}
	pw := args[0]
	st := stateOf(ts)
	if st.engine.kind == "mysql" {
		mysqlPassword(ts, st, pw)
		return
	}
	if st.sentinel != nil {
		sentinelPassword(ts, st, pw)
		return
	}
	if st.cluster != nil {
		clusterPassword(ts, st, pw)
		return
	}
	if st.engine.kind != "redis" {
		return
	}
	var addr string
	switch {
	case st.mini != nil:
		st.mini.RequireAuth(pw)
		addr = st.mini.Addr()
	case st.server != nil:
		addr = st.server.Addr()
	default:
		ts.Fatalf("enginepassword: no Redis server in this script")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st.mini == nil {
		c := redis.NewClient(&redis.Options{Addr: addr})
		err := c.ConfigSet(ctx, "requirepass", pw).Err()
		c.Close()
		ts.Check(err)
	}
	// The server refuses a client without the password and takes one with
	// it. (These requests also order the password's setting before the
	// server's later reads of it for the race detector: miniredis reads it
	// without its lock when a connection says HELLO.)
	anon := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	err := anon.Ping(ctx).Err()
	anon.Close()
	if err == nil {
		ts.Fatalf("enginepassword: the server still takes clients without a password")
	}
	auth := redis.NewClient(&redis.Options{Addr: addr, Password: pw})
	err = auth.Ping(ctx).Err()
	auth.Close()
	ts.Check(err)
}

// mysqlPassword gives the test server's user (root over TCP) the password
// pw, so that only a client that sends it gets in.
func mysqlPassword(ts *testscript.TestScript, st *engineState, pw string) {
	if st.server == nil {
		ts.Fatalf("enginepassword: no MariaDB server in this script")
	}
	db, err := sql.Open("mysql", server.MariaDBUser+"@tcp("+st.server.Addr()+")/")
	ts.Check(err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '"+pw+"'")
	ts.Check(err)
}

// sentinelPassword makes every data node of the Sentinel deployment
// require pw: the sentinels are told first (auth-pass), the replicas
// authenticate to the master with it (masterauth), then the nodes require
// it. The sentinels themselves stay open.
func sentinelPassword(ts *testscript.TestScript, st *engineState, pw string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	do := func(addr string, args ...any) {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer c.Close()
		ts.Check(c.Do(ctx, args...).Err())
	}
	for _, p := range st.sentinel.Sentinels {
		do(p.Addr(), "SENTINEL", "SET", server.SentinelMaster, "auth-pass", pw)
	}
	for _, p := range st.sentinel.Nodes() {
		do(p.Addr(), "CONFIG", "SET", "masterauth", pw)
	}
	for _, p := range st.sentinel.Nodes() {
		do(p.Addr(), "CONFIG", "SET", "requirepass", pw)
	}
	anon := redis.NewClient(&redis.Options{Addr: st.sentinel.Master.Addr(), MaxRetries: -1})
	err := anon.Ping(ctx).Err()
	anon.Close()
	if err == nil {
		ts.Fatalf("enginepassword: the master still takes clients without a password")
	}
}

// clusterPassword makes every node of the cluster require pw (the cluster
// bus between the nodes needs none).
func clusterPassword(ts *testscript.TestScript, st *engineState, pw string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range st.cluster.Nodes {
		c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
		err := c.ConfigSet(ctx, "requirepass", pw).Err()
		c.Close()
		ts.Check(err)
	}
	anon := redis.NewClient(&redis.Options{Addr: st.cluster.Nodes[0].Addr(), MaxRetries: -1})
	err := anon.Ping(ctx).Err()
	anon.Close()
	if err == nil {
		ts.Fatalf("enginepassword: the cluster still takes clients without a password")
	}
}
