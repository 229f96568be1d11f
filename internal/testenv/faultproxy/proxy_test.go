package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// quiet is how long a held connection must stay silent. A slow machine
	// can only make such a check pass wrongly, never fail wrongly.
	quiet = 200 * time.Millisecond
	// patience bounds every wait for something that must happen.
	patience = 10 * time.Second
)

// tapServer is a loopback TCP server that hands every accepted connection
// to the test; with echo set it echoes instead.
type tapServer struct {
	ln       net.Listener
	accepted chan net.Conn
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startServer(t *testing.T, echo bool) *tapServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tapServer{ln: ln, accepted: make(chan net.Conn, 16)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			if !echo {
				s.accepted <- c
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *tapServer) addr() string { return s.ln.Addr().String() }

func (s *tapServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// nextConn waits for the server to accept a connection.
func (s *tapServer) nextConn(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		return c
	case <-time.After(patience):
		t.Fatal("server accepted no connection")
		return nil
	}
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if err := c.SetWriteDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// readExactly reads len(want) bytes within patience and compares.
func readExactly(t *testing.T, c net.Conn, want string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading %q: %v", want, err)
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// expectSilence asserts that nothing (no byte, no EOF) arrives on c for quiet.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(quiet)); err != nil {
		t.Fatal(err)
	}
	var b [64]byte
	n, err := c.Read(b[:])
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read during pause returned %q, %v; want a timeout", b[:n], err)
	}
}

// expectBroken asserts that a read on c fails at once with EOF or a reset,
// not a timeout.
func expectBroken(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	var b [64]byte
	n, err := c.Read(b[:])
	if err == nil {
		t.Fatalf("read returned %q, want EOF or reset", b[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("read timed out, want EOF or reset: %v", err)
	}
}

// roundTrip checks that a fresh connection through addr echoes.
func roundTrip(t *testing.T, addr, msg string) {
	t.Helper()
	c := dial(t, addr)
	write(t, c, msg)
	readExactly(t, c, msg)
	_ = c.Close()
}

func TestForwards(t *testing.T) {
	echo := startServer(t, true)
	p := newProxy(t, echo.addr())
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %q, want 127.0.0.1:port", p.Addr())
	}

	roundTrip(t, p.Addr(), "hello")

	// A larger payload arrives intact, concurrently with reading it back.
	c := dial(t, p.Addr())
	payload := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		werr <- err
	}()
	readExactly(t, c, string(payload))
	if err := <-werr; err != nil {
		t.Fatal(err)
	}

	// A half-close is forwarded: the echo server sees EOF and closes, so
	// the client reads EOF.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after half-close: read %d, %v; want EOF", n, err)
	}
}

func TestNewRejectsBadTarget(t *testing.T) {
	if p, err := New("no-port"); err == nil {
		_ = p.Close()
		t.Fatal("New accepted a target without a port")
	}
}

func TestPauseHoldsBytesUntilResume(t *testing.T) {
	echo := startServer(t, true)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	write(t, c, "warm")
	readExactly(t, c, "warm")

	p.Pause()
	p.Pause() // idempotent
	write(t, c, "ping")
	expectSilence(t, c)

	p.Resume()
	p.Resume() // idempotent
	readExactly(t, c, "ping")
}

func TestPauseHoldsBothDirections(t *testing.T) {
	srv := startServer(t, false)
	p := newProxy(t, srv.addr())
	c := dial(t, p.Addr())
	write(t, c, "x")
	s := srv.nextConn(t)
	readExactly(t, s, "x")

	p.Pause()
	write(t, c, "to-server")
	write(t, s, "to-client")
	expectSilence(t, s)
	expectSilence(t, c)

	p.Resume()
	readExactly(t, s, "to-server")
	readExactly(t, c, "to-client")
}

func TestPauseHoldsNewConnections(t *testing.T) {
	srv := startServer(t, false)
	p := newProxy(t, srv.addr())
	p.Pause()

	// The proxy accepts, but does not even dial the target.
	c := dial(t, p.Addr())
	write(t, c, "hello")
	select {
	case s := <-srv.accepted:
		t.Fatalf("target got a connection from %v during pause", s.RemoteAddr())
	case <-time.After(quiet):
	}
	expectSilence(t, c)

	p.Resume()
	s := srv.nextConn(t)
	readExactly(t, s, "hello")
	write(t, s, "hi")
	readExactly(t, c, "hi")
}

func TestPauseHoldsHalfClose(t *testing.T) {
	srv := startServer(t, false)
	p := newProxy(t, srv.addr())
	c := dial(t, p.Addr())
	write(t, c, "x")
	s := srv.nextConn(t)
	readExactly(t, s, "x")

	p.Pause()
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	expectSilence(t, s) // no EOF either

	p.Resume()
	if err := s.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after resume: read %d, %v; want EOF", n, err)
	}
}

// waitHeld waits until the proxy holds exactly the given byte counts.
func waitHeld(t *testing.T, p *Proxy, toServer, toClient int64) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		s, c := p.Held()
		if s == toServer && c == toClient {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Held() = %d, %d; want %d, %d", s, c, toServer, toClient)
		}
		time.Sleep(time.Millisecond) // poll interval, not an assertion
	}
}

// PauseReplies lets requests through and holds the answers: the server
// reads what the client sent and answers, the client hears nothing (no
// byte, no half-close) until Resume, and then gets it all.
func TestPauseRepliesForwardsRequestsHoldsReplies(t *testing.T) {
	srv := startServer(t, false)
	p := newProxy(t, srv.addr())
	c := dial(t, p.Addr())
	write(t, c, "x")
	s := srv.nextConn(t)
	readExactly(t, s, "x")

	p.PauseReplies()
	p.PauseReplies() // idempotent
	write(t, c, "request")
	readExactly(t, s, "request")
	write(t, s, "reply")
	waitHeld(t, p, 0, int64(len("reply")))
	if err := s.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	expectSilence(t, c)

	// A new connection is dialled and its request arrives; its reply is
	// held too.
	c2 := dial(t, p.Addr())
	write(t, c2, "second")
	s2 := srv.nextConn(t)
	readExactly(t, s2, "second")
	write(t, s2, "r2")
	expectSilence(t, c2)

	p.Resume()
	readExactly(t, c, "reply")
	if err := c.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after resume: read %d, %v; want the held EOF", n, err)
	}
	readExactly(t, c2, "r2")
	waitHeld(t, p, 0, 0)
}

// Pause holds both directions even while PauseReplies is on, and Held
// counts the request a paused proxy holds; one Resume ends both.
func TestPauseOverPauseRepliesAndHeld(t *testing.T) {
	srv := startServer(t, false)
	p := newProxy(t, srv.addr())
	c := dial(t, p.Addr())
	write(t, c, "x")
	s := srv.nextConn(t)
	readExactly(t, s, "x")

	p.PauseReplies()
	p.Pause()
	write(t, c, "held-request")
	waitHeld(t, p, int64(len("held-request")), 0)
	expectSilence(t, s)

	p.Resume()
	readExactly(t, s, "held-request")
	write(t, s, "answer")
	readExactly(t, c, "answer")
	waitHeld(t, p, 0, 0)
}

// Drop during PauseReplies breaks the connection at once: a held reply is
// lost, not delivered.
func TestDropDuringPauseReplies(t *testing.T) {
	srv := startServer(t, false)
	p := newProxy(t, srv.addr())
	c := dial(t, p.Addr())
	write(t, c, "x")
	s := srv.nextConn(t)
	readExactly(t, s, "x")

	p.PauseReplies()
	write(t, s, "lost")
	waitHeld(t, p, 0, int64(len("lost")))
	p.Drop()
	expectBroken(t, c)
	waitHeld(t, p, 0, 0)
	p.Heal()
	p.Resume()
	c2 := dial(t, p.Addr())
	write(t, c2, "again")
	s2 := srv.nextConn(t)
	readExactly(t, s2, "again")
	write(t, s2, "ok")
	readExactly(t, c2, "ok")
}

func TestDropAndHeal(t *testing.T) {
	echo := startServer(t, true)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	write(t, c, "before")
	readExactly(t, c, "before")

	p.Drop()
	expectBroken(t, c)

	// New connections are refused: the dial fails or the connection is
	// closed at once.
	nc, err := net.DialTimeout("tcp", p.Addr(), patience)
	if err == nil {
		t.Cleanup(func() { _ = nc.Close() })
		expectBroken(t, nc)
	}

	addr := p.Addr()
	p.Heal()
	if p.Addr() != addr {
		t.Fatalf("Addr changed from %s to %s", addr, p.Addr())
	}
	roundTrip(t, p.Addr(), "after")
}

func TestDropWhilePaused(t *testing.T) {
	echo := startServer(t, true)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	write(t, c, "a")
	readExactly(t, c, "a")

	p.Pause()
	held := dial(t, p.Addr()) // accepted, not yet dialled through
	write(t, c, "b")
	p.Drop()
	expectBroken(t, c)
	expectBroken(t, held)

	// Heal does not undo Pause: a new connection is held until Resume.
	p.Heal()
	n := dial(t, p.Addr())
	write(t, n, "c")
	expectSilence(t, n)
	p.Resume()
	readExactly(t, n, "c")
}

func TestTargetDownResetsClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	_ = ln.Close() // nothing listens there now

	// The client's connection is reset, possibly before its dial returns.
	p := newProxy(t, target)
	c, err := net.DialTimeout("tcp", p.Addr(), patience)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
		expectBroken(t, c)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	echo := startServer(t, true)
	p, err := New(echo.addr())
	if err != nil {
		t.Fatal(err)
	}
	active := dial(t, p.Addr())
	write(t, active, "x")
	readExactly(t, active, "x")
	p.Pause()
	held := dial(t, p.Addr())
	write(t, active, "y")
	write(t, held, "z")

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		t.Fatal("Close did not return while paused with open connections")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	expectBroken(t, active)
	expectBroken(t, held)
	if c, err := net.DialTimeout("tcp", p.Addr(), patience); err == nil {
		_ = c.Close()
		t.Fatal("dial succeeded after Close")
	}

	// Close waited for its goroutines; allow them to finish returning.
	deadline := time.Now().Add(patience)
	for {
		left := proxyGoroutines()
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Close:\n%s", left)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // poll interval, not an assertion
	}
}

// proxyGoroutines returns the stacks of goroutines running proxy code.
func proxyGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "faultproxy.(*Proxy)") || strings.Contains(g, "faultproxy.(*conn)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
