package server

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// redisConn is a raw RESP connection speaking inline commands.
type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRedis(t *testing.T, addr string) *redisConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &redisConn{c: c, r: bufio.NewReader(c)}
}

func (rc *redisConn) send(t *testing.T, cmd string) {
	t.Helper()
	if err := rc.c.SetWriteDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
}

// reply reads one reply line within d.
func (rc *redisConn) reply(d time.Duration) (string, error) {
	if err := rc.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	line, err := rc.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func (rc *redisConn) do(t *testing.T, cmd, want string) {
	t.Helper()
	rc.send(t, cmd)
	got, err := rc.reply(patience)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	if got != want {
		t.Fatalf("%s = %q, want %q", cmd, got, want)
	}
}

func TestRedis(t *testing.T) {
	dir := t.TempDir()
	p, err := StartRedis(dir)
	p = started(t, p, err)
	addr := p.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Addr() = %q", addr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "redis.log")); err != nil || fi.Size() == 0 {
		t.Errorf("redis.log in dir: %v", err)
	}

	// The readiness probe tells our server from another one on the port.
	if err := redisAnswers(t.Context(), addr, p.pid); err != nil {
		t.Fatal(err)
	}
	if err := redisAnswers(t.Context(), addr, p.pid+1); err == nil {
		t.Fatal("probe accepted a server with another process id")
	}

	rc := dialRedis(t, addr)
	rc.do(t, "PING", "+PONG")
	rc.do(t, "SET k v", "+OK")

	// Stopped: the request is accepted by the kernel but never answered.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	rc.send(t, "PING")
	if got, err := rc.reply(quiet); !isTimeout(err) {
		t.Fatalf("stopped redis answered %q, %v; want a timeout", got, err)
	}

	// Continued: the pending request is answered.
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	if got, err := rc.reply(patience); err != nil || got != "+PONG" {
		t.Fatalf("after Cont: %q, %v; want +PONG", got, err)
	}

	// Restarted while stopped: same address, empty.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("Addr changed from %s to %s", addr, p.Addr())
	}
	rc = dialRedis(t, addr)
	rc.do(t, "PING", "+PONG")
	rc.do(t, "GET k", "$-1")
}

func TestRedisKill(t *testing.T) {
	p, err := StartRedis(t.TempDir())
	p = started(t, p, err)
	rc := dialRedis(t, p.Addr())
	rc.do(t, "PING", "+PONG")

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if got, err := rc.reply(patience); err == nil || isTimeout(err) {
		t.Fatalf("connection to killed redis: %q, %v; want EOF or reset", got, err)
	}
	waitRefused(t, p.Addr())
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	if err := p.Stop(); err == nil {
		t.Error("Stop of a killed server succeeded")
	}
	if err := p.Cont(); err == nil {
		t.Error("Cont of a killed server succeeded")
	}

	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	dialRedis(t, p.Addr()).do(t, "PING", "+PONG")

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, p.Addr())
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := p.Restart(); err == nil {
		t.Error("Restart after Close succeeded")
	}
}
