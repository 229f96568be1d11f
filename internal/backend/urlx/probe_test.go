package urlx

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"
)

// TestProbe: a closed port says "connection refused" (without the dial's
// noise), a listening one nothing unless after says something, and a failed
// TLS handshake is reported, not a panic.
func TestProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and hang up: no TLS spoken here
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := gone.Addr().String()
	gone.Close()
	open := ln.Addr().String()

	if got := Probe([]string{open}, time.Second, nil, nil); got != "" {
		t.Errorf("a listening port: %q, want nothing", got)
	}
	if got, want := Probe([]string{closed, open}, time.Second, nil, nil), closed+": connection refused"; got != want {
		t.Errorf("a closed port and a listening one: %q, want %q", got, want)
	}
	after := func(net.Conn) string { return "silent" }
	if got, want := Probe([]string{open}, time.Second, nil, after), open+": silent"; got != want {
		t.Errorf("after on a listening port: %q, want %q", got, want)
	}
	got := Probe([]string{open}, time.Second, &tls.Config{}, after)
	if !strings.HasPrefix(got, open+": ") || strings.Contains(got, "silent") {
		t.Errorf("a TLS handshake with a port that hangs up: %q, want its error", got)
	}
}
