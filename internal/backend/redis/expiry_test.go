package redis

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/server"
)

// TestExpiryPropagatedAbsolute (issue 20, hole 5) shows what
// docs/GUARANTEES.md says of redis+sentinel://…?wait=N: Redis propagates
// a lease's expiry to its replicas (and its append-only file, which is
// fed the same stream) as PEXPIREAT, the master's absolute time in ms,
// although the scripts call PEXPIRE with a relative TTL, for a grant as
// for a renewal. A replica promoted by Sentinel ends the lease when its
// own clock reaches that time: a clock ahead of the old master's by Δ
// shortens the lease by Δ. distlock cannot send a relative expiry that
// survives replication; it can only say so, and doctor checks the
// replicas' clocks.
func TestExpiryPropagatedAbsolute(t *testing.T) {
	dir := t.TempDir()
	p, err := server.StartRedis(dir)
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr()})
	t.Cleanup(func() { c.Close() })
	for _, kv := range [][2]string{{"appendfsync", "always"}, {"appendonly", "yes"}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info := parseInfo(c.Info(ctx, "persistence").Val())
		if info["aof_enabled"] == "1" && info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the append-only file was not turned on: %v", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b := &Backend{c: c, prefix: "distlock", addr: "redis at " + p.Addr()}
	const ttl = 30 * time.Second
	before := time.Now()
	l, err := lock.TryOnce(ctx, b, req("k", "o", 1, ttl))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	files, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	var stream []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, strings.Split(string(data), "\r\n")...)
	}
	var abs []int64
	for i, s := range stream {
		switch strings.ToUpper(s) {
		case "PEXPIRE", "EXPIRE":
			t.Errorf("a relative %s was propagated: Redis kept the TTL relative", s)
		case "PEXPIREAT":
			if i+4 < len(stream) && stream[i+2] == "distlock:{k}" {
				ms, err := strconv.ParseInt(stream[i+4], 10, 64)
				if err != nil {
					t.Fatalf("PEXPIREAT %q: %v", stream[i+4], err)
				}
				abs = append(abs, ms)
			}
		}
	}
	if len(abs) != 2 {
		t.Fatalf("found %d PEXPIREAT of the lock hash in the propagated stream, want 2 (grant, renewal): %q", len(abs), stream)
	}
	for _, ms := range abs {
		at := time.UnixMilli(ms)
		if at.Before(before.Add(ttl-time.Second)) || at.After(after.Add(ttl+time.Second)) {
			t.Errorf("PEXPIREAT %s, want the master's clock + %s", at.Format(time.RFC3339Nano), ttl)
		}
	}
	t.Logf("the lease's expiry reaches replicas as PEXPIREAT %d and %d (absolute, master's clock)", abs[0], abs[1])
}
