package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds one dial to the target; Close cancels it sooner.
const dialTimeout = 10 * time.Second

// conn is one proxied connection: the accepted client side and, once
// dialled, the server side.
type conn struct {
	id     uint64 // for a Tap: which connection a chunk was on
	client net.Conn
	done   chan struct{} // closed by abort
	once   sync.Once

	mu      sync.Mutex
	server  net.Conn
	aborted bool
}

func newConn(client net.Conn) *conn {
	return &conn{client: client, done: make(chan struct{})}
}

// setServer records the dialled server side. It reports false if the
// connection was aborted meanwhile; the caller then owns (and must reset) s.
func (c *conn) setServer(s net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		return false
	}
	c.server = s
	return true
}

// abort closes both sides abruptly (RST, not FIN) and wakes every goroutine
// of this connection that waits for Resume.
func (c *conn) abort() {
	c.once.Do(func() {
		c.mu.Lock()
		c.aborted = true
		s := c.server
		c.mu.Unlock()
		close(c.done)
		reset(c.client)
		if s != nil {
			reset(s)
		}
	})
}

func reset(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST
	}
	_ = nc.Close()
}

func closeWrite(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = nc.Close()
}

// serve dials the target (once not paused) and copies both ways until both
// directions have ended or the connection is aborted.
func (p *Proxy) serve(c *conn) {
	defer p.wg.Done()
	defer p.forget(c)

	if !p.waitOpen(c, toServer) {
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	s, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		c.abort()
		return
	}
	if !c.setServer(s) {
		reset(s)
		return
	}

	upDone := make(chan struct{})
	go func() {
		defer close(upDone)
		p.pipe(c, s, c.client, toServer)
	}()
	p.pipe(c, c.client, s, toClient)
	<-upDone

	// Both directions ended (or the connection was aborted): release both.
	_ = c.client.Close()
	_ = s.Close()
}

// pipe copies src to dst in direction d. Every event it forwards — bytes,
// a half-close, a reset — first waits until the proxy does not hold d, so a
// paused proxy lets nothing through in that direction.
func (p *Proxy) pipe(c *conn, dst, src net.Conn, d direction) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			p.held[d].Add(int64(n))
			open := p.waitOpen(c, d)
			if open {
				if tap := p.tap.Load(); tap != nil {
					(*tap)(c.id, d == toServer, buf[:n], time.Now())
				}
				_, err := dst.Write(buf[:n])
				open = err == nil
				if !open {
					c.abort()
				}
			}
			p.held[d].Add(-int64(n))
			if !open {
				return
			}
		}
		if rerr != nil {
			if !p.waitOpen(c, d) {
				return
			}
			if errors.Is(rerr, io.EOF) {
				closeWrite(dst)
			} else {
				c.abort()
			}
			return
		}
	}
}
