package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/testenv/server"
)

func skipMissing(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, server.ErrNoBinary) && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A script's own commands are not requests: an EVAL that calls PEXPIRE
// is one request (INFO commandstats would say two), and a command
// MONITOR does not show is reported, not silently dropped.
func TestRedisCounterCountsTopLevelCommands(t *testing.T) {
	p, err := server.StartRedis(filepath.Join(t.TempDir(), "redis"))
	skipMissing(t, err)
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), Protocol: 2, DisableIdentity: true, PoolSize: 1})
	defer c.Close()
	if err := c.Set(ctx, "warm", "up", 0).Err(); err != nil { // the connection, outside the window
		t.Fatal(err)
	}
	ctr := redisCounter{p.Addr()}
	w, err := ctr.begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "a", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Eval(ctx, `redis.call('PEXPIRE', KEYS[1], 10000) return redis.call('GET', KEYS[1])`, []string{"a"}).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := w.end()
	if err != nil {
		t.Fatal(err)
	}
	if n.Requests != 2 || n.ByCommand["set"] != 1 || n.Clients != 1 || n.Mismatch != "" {
		t.Fatalf("count = %+v, want 2 requests (set, eval) from 1 client, no mismatch", n)
	}

	w, err = ctr.begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigGet(ctx, "maxmemory").Err(); err != nil { // an admin command: MONITOR hides it
		t.Fatal(err)
	}
	if n, err = w.end(); err != nil {
		t.Fatal(err)
	}
	if n.Requests != 0 || n.Mismatch == "" {
		t.Fatalf("count = %+v, want 0 requests seen and a mismatch reported", n)
	}
}

// A KeepAliveOnce is one request on one stream of its own.
func TestEtcdCounterCountsAKeepAliveOnceAsOneRequestOnOneStream(t *testing.T) {
	p, err := server.StartEtcd(filepath.Join(t.TempDir(), "etcd"))
	skipMissing(t, err)
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.Addr()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	g, err := cli.Grant(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	w, err := etcdCounter{p.Addr()}.begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.KeepAliveOnce(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	n, err := w.end()
	if err != nil {
		t.Fatal(err)
	}
	if n.Requests != 2 || n.ByCommand["LeaseKeepAlive"] != 1 || n.ByCommand["Range"] != 1 || n.Streams != 1 {
		t.Fatalf("count = %+v, want 2 requests (LeaseKeepAlive, Range) and 1 stream", n)
	}
}

// Every message received counts, by method; a stream opened counts only
// for a method whose grpc_type is not unary; other families are not read.
func TestParseEtcdMetricsReadsTheGRPCCounters(t *testing.T) {
	const text = `# TYPE grpc_server_msg_received_total counter
grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 3
grpc_server_msg_received_total{grpc_type="bidi_stream",grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease"} 2
# TYPE grpc_server_started_total counter
grpc_server_started_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 3
grpc_server_started_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 1
grpc_server_started_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 4
# TYPE grpc_server_handled_total counter
grpc_server_handled_total{grpc_code="OK",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 2
`
	m, err := parseEtcdMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := etcdMetrics{
		received: map[string]float64{"Range": 3, "LeaseKeepAlive": 2},
		streams:  map[string]float64{"LeaseKeepAlive": 1, "Watch": 4},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("parsed %+v, want %+v", m, want)
	}
	if _, err := parseEtcdMetrics(strings.NewReader("grpc_server_started_total{grpc_method=\"Watch\"} many\n")); err == nil {
		t.Fatal("a value that is no number parsed without an error")
	}
}
