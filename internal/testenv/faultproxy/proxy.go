// Package faultproxy is a TCP proxy on 127.0.0.1 that tests put between a
// client and a real server to inject network faults: Pause holds every byte
// (a black hole that keeps connections open), PauseReplies holds only what
// the server sends (requests arrive and are acted on, their answers do
// not), Drop tears connections down and refuses new ones. Faults are real
// socket behaviour, never mocks.
package faultproxy

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// direction is the way bytes travel through the proxy.
type direction int

const (
	toServer direction = iota // client → server: requests
	toClient                  // server → client: replies
)

// Proxy forwards TCP connections from Addr to a target. Its zero value is
// not usable; create one with New. All methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	ctx    context.Context // cancelled by Close; bounds dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection goroutine

	mu      sync.Mutex
	paused  bool          // both directions held
	replies bool          // server → client held (PauseReplies)
	resume  chan struct{} // closed by Resume; non-nil while anything is held
	dropped bool
	refused int // connections closed on accept since the last Drop
	closed  bool
	conns   map[*conn]struct{}

	held [2]atomic.Int64 // bytes read and not yet written on, per direction

	tap    atomic.Pointer[Tap]
	nextID atomic.Uint64
}

// Tap sees every chunk the proxy forwards, just before it is written on:
// conn numbers the connection, toServer says the direction, at is when
// (the other side cannot have read it before). It must not keep data, and
// must return quickly.
type Tap func(conn uint64, toServer bool, data []byte, at time.Time)

// SetTap makes f see every chunk forwarded from now on (nil: none).
func (p *Proxy) SetTap(f Tap) {
	if f == nil {
		p.tap.Store(nil)
		return
	}
	p.tap.Store(&f)
}

// New listens on 127.0.0.1:0 and forwards every accepted connection to
// target ("host:port").
func New(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target: target,
		ln:     ln,
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[*conn]struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's listening address, "127.0.0.1:port". It never changes.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Pause holds all traffic in both directions on existing and new
// connections: new connections are accepted but not forwarded (the target
// is not even dialled), bytes, half-closes and resets are held until Resume.
// Connections stay open. A write already under way when Pause is called may
// complete; nothing starts after Pause returns.
func (p *Proxy) Pause() { p.hold(&p.paused) }

// PauseReplies holds what servers send (bytes, half-closes, resets) on
// existing and new connections until Resume, while what clients send is
// forwarded: a request reaches the server and takes effect, but its reply
// is lost to the client for as long as the pause lasts. New connections are
// dialled. Pause holds both directions whatever PauseReplies says.
func (p *Proxy) PauseReplies() { p.hold(&p.replies) }

// hold sets a pause flag (p.paused, p.replies) under p.mu, and makes the
// channel Resume closes if no pause has made it yet.
func (p *Proxy) hold(flag *bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*flag = true
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// Resume releases held traffic (of Pause and PauseReplies) and forwards
// again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused, p.replies = false, false
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// Held reports how many bytes the proxy has read from clients (requests)
// and from servers (replies) and not yet passed on: while a pause holds a
// direction, its count says that something was sent and is being held.
// Bytes a paused proxy has not read yet (a new connection that is not
// dialled, or what is queued behind the held bytes) are not counted.
func (p *Proxy) Held() (requests, replies int64) {
	return p.held[toServer].Load(), p.held[toClient].Load()
}

// Drop abruptly closes (RST) both sides of every current connection and,
// until Heal, closes every new connection as soon as it is accepted, so a
// client's dial may succeed but its first read fails at once.
func (p *Proxy) Drop() {
	p.mu.Lock()
	p.dropped, p.refused = true, 0
	victims := p.snapshotLocked()
	p.mu.Unlock()
	for _, c := range victims {
		c.abort()
	}
}

// Refused is how many connections were closed on accept since the last
// Drop: how often clients tried to reconnect meanwhile.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Heal accepts and forwards new connections again after Drop. It does not
// undo Pause.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped = false
}

// Close stops the proxy: it closes the listener and every connection and
// waits until all of its goroutines have returned. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	victims := p.snapshotLocked()
	p.mu.Unlock()

	err := p.ln.Close()
	p.cancel()
	for _, c := range victims {
		c.abort()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) snapshotLocked() []*conn {
	cs := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	return cs
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. out of file descriptors): back off briefly.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		c := newConn(nc)
		c.id = p.nextID.Add(1)
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			c.abort()
			return
		case p.dropped:
			p.refused++
			p.mu.Unlock()
			c.abort()
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// waitOpen blocks while the proxy holds direction d. It reports false if c
// was aborted meanwhile (Drop or Close), in which case nothing may be
// forwarded.
func (p *Proxy) waitOpen(c *conn, d direction) bool {
	for {
		p.mu.Lock()
		paused, resume := p.paused || (d == toClient && p.replies), p.resume
		p.mu.Unlock()
		if !paused {
			select {
			case <-c.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-resume:
		case <-c.done:
			return false
		}
	}
}

func (p *Proxy) forget(c *conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
