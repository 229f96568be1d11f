package zookeeper

// Sessions: each on a connection of its own, dialled with distlock's own
// host provider and a connection that reads the granted timeout; a
// session that does not come says why (a server at its maxClientCnxns).
// The backend's own session is parked while a run holds (admin).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// session is one ZooKeeper session on its own connection. sniffConn
// reads negotiated, the session timeout the server granted (ms), and
// counts in refused the connections the server closed before it sent a
// byte.
type session struct {
	conn       *zk.Conn
	hosts      *hostProvider
	sid        int64 // the session id it started with
	negotiated atomic.Int32
	refused    atomic.Int32
}

// adminSession is the session timeout asked for the backend's own session
// (status, list, break, resume, doctor): it holds no locks.
const adminSession = 10 * time.Second

// dial opens a session asking for timeout and waits, until ctx ends or
// at most the connect timeout, for the server to grant it.
func (b *Backend) dial(ctx context.Context, timeout time.Duration) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, b.connectTO)
	defer cancel()
	s := &session{hosts: &hostProvider{}}
	dialer := func(network, address string, to time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, to)
		if err != nil {
			return nil, err
		}
		return &sniffConn{Conn: c, s: s}, nil
	}
	has := make(chan struct{}, 1)
	// go-zookeeper logs nothing: failures reach the user as errors.
	conn, _, err := zk.Connect(b.servers, timeout, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false),
		zk.WithDialer(dialer), zk.WithHostProvider(s.hosts),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				notify(has)
			}
		}))
	if err != nil {
		return nil, lock.Invalidf("zookeeper servers %s: %v", b.desc, err)
	}
	s.conn = conn
	select {
	case <-has:
		s.sid = conn.SessionID()
		return s, nil
	case <-ctx.Done():
		s.close(0)
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, b.noSession(s, ctx.Err())
	}
}

// close ends the session (the server deletes its ephemeral nodes), waiting
// at most wait for that to be done; go-zookeeper's Close can block for
// seconds against a silent server.
func (s *session) close(wait time.Duration) {
	s.hosts.closed.Store(true)
	done := make(chan struct{})
	go func() {
		s.conn.Close()
		close(done)
	}()
	if wait > 0 {
		select {
		case <-done:
		case <-time.After(wait):
		}
	}
}

// hostProvider hands go-zookeeper the servers in turn. Its own provider
// waits a whole second after each round of failed connections; a lease of
// a few seconds cannot spare that after a server restart, so this one
// waits 50ms doubling to 400ms between rounds instead. Once the session is
// closed it reports the end of a round at once, which is where the client
// notices that it was closed.
type hostProvider struct {
	mu      sync.Mutex
	servers []string
	next    int
	failed  int // servers tried since the last connection
	rounds  int // rounds without a connection
	closed  atomic.Bool
}

func (h *hostProvider) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("no servers")
	}
	h.servers = servers
	return nil
}

func (h *hostProvider) Len() int { return len(h.servers) }

func (h *hostProvider) Next() (string, bool) {
	h.mu.Lock()
	server := h.servers[h.next]
	h.next = (h.next + 1) % len(h.servers)
	h.failed++
	var pause time.Duration
	if h.failed > len(h.servers) {
		h.failed = 1
		pause = min(50*time.Millisecond<<min(h.rounds, 3), 400*time.Millisecond)
		h.rounds++
	}
	h.mu.Unlock()
	if !h.closed.Load() {
		time.Sleep(pause)
	}
	return server, h.closed.Load()
}

func (h *hostProvider) Connected() {
	h.mu.Lock()
	h.failed, h.rounds = 0, 0
	h.mu.Unlock()
}

// lostSession reports whether the client gave up our session and made a
// new one (it does so, silently, once the server says ours expired).
func (s *session) lostSession() bool {
	id := s.conn.SessionID()
	return id != s.sid || s.conn.State() == zk.StateExpired
}

// sniffConn reads the session timeout the server granted from the first
// frame it sends on a connection, the connect response: length (4 bytes),
// protocol version (4), timeout in ms (4), session id (8), password.
//
// It also counts a connection whose first read ended it without a byte: a
// ZooKeeper server that has as many connections from one client IP as its
// maxClientCnxns allows (60 by default) accepts each further connection
// and closes it at once; go-zookeeper then reconnects, again and again,
// and the session never comes (noSession says so).
type sniffConn struct {
	net.Conn
	s    *session
	off  int
	head [12]byte
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.off == 0 && n == 0 && isClosed(err) {
		c.s.refused.Add(1)
	}
	if c.off < len(c.head) && n > 0 {
		c.off += copy(c.head[c.off:], p[:n])
		if to := int32(binary.BigEndian.Uint32(c.head[8:12])); c.off == len(c.head) && to > 0 {
			c.s.negotiated.Store(to)
		}
	}
	return n, err
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// noSession is the error of a dial that got no session in time: the
// server refusing connections from this host (maxClientCnxns), or why
// else, by probing each server.
func (b *Backend) noSession(s *session, err error) error {
	why, refused := probe(b.servers)
	if n := s.refused.Load(); n > 0 || refused {
		return &lock.UnavailableError{
			Msg: fmt.Sprintf("zookeeper at %s closed the connection at once, %d times: it refuses more connections from this host (its maxClientCnxns, 60 by default, counts every client on the host); raise maxClientCnxns in zoo.cfg on every server, or run fewer distlock processes on this host at once",
				b.desc, max(n, 1)),
			Err: err,
		}
	}
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("zookeeper at %s gave no session in time (%s): check the address and that the ensemble is up and has a quorum, or raise --connect-timeout",
			b.desc, why),
		Err: err,
	}
}

// probe says why the servers gave no session: refused, closed at once
// (refused is then true), or silent (urlx.Probe, all at once).
func probe(servers []string) (why string, refused bool) {
	var closed atomic.Bool
	why = urlx.Probe(servers, 300*time.Millisecond, nil, func(c net.Conn) string {
		// A server waits for the client's connect request; one that
		// closes the connection first refuses this client.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); isClosed(err) {
			closed.Store(true)
			return "closed the connection at once"
		}
		return "accepts connections but did not answer"
	})
	return why, closed.Load()
}

// admin is the backend's own session, which serves status, list, break,
// resume and doctor. A run needs it only until its contender has a
// session of its own (the lease), so it is closed then ("parked") and
// dialled again if anything asks for it later: a run holds one
// connection, not two. At a server's maxClientCnxns (60 per client IP by
// default) 70 runs started at once each held their first connection while
// waiting for a second, and 64 of them failed (issue 25).
type admin struct {
	mu    sync.Mutex
	s     *session // nil while parked
	users int
	park  bool // park once the last user is done
}

// parkWait bounds how long parking waits for the server to end the
// session (and so free its connection) before the contender dials.
const parkWait = 250 * time.Millisecond

// useAdmin returns the backend's own session, dialled again if it was
// parked, after checking that the keys a request is about are valid; the
// caller calls done once it no longer uses it.
func (b *Backend) useAdmin(ctx context.Context, keys ...string) (s *session, done func(), err error) {
	for _, key := range keys {
		if err := lock.ValidateKey(key); err != nil {
			return nil, func() {}, err
		}
	}
	return b.use(ctx, false)
}

// use is the backend's own session, as useAdmin; brief is for a call
// that must not keep a second connection open for the rest of a run (the
// run ledger's, made by a run that holds its lock on a session of its
// own): while the backend's own session is parked, it dials a session for
// this call alone, closed once done.
func (b *Backend) use(ctx context.Context, brief bool) (s *session, done func(), err error) {
	b.adm.mu.Lock()
	parked := b.adm.s == nil
	if parked && brief {
		b.adm.mu.Unlock() // a brief dial holds up no one
		if s, err = b.dial(ctx, adminSession); err != nil {
			return nil, func() {}, err
		}
		return s, func() { s.close(parkWait) }, nil
	}
	defer b.adm.mu.Unlock()
	if parked {
		if b.adm.s, err = b.dial(ctx, adminSession); err != nil {
			return nil, func() {}, err
		}
	}
	b.adm.users++
	b.adm.park = false
	var once sync.Once
	return b.adm.s, func() { once.Do(func() { b.doneAdmin(1, false) }) }, nil
}

// doneAdmin ends users uses of the backend's own session (park: and asks
// for it to be parked), which is closed once it has no user left and is
// to be parked. doneAdmin(0, true) parks it now, or once its last user is
// done.
func (b *Backend) doneAdmin(users int, park bool) {
	b.adm.mu.Lock()
	defer b.adm.mu.Unlock()
	b.adm.users -= users
	b.adm.park = b.adm.park || park
	if b.adm.users == 0 && b.adm.park && b.adm.s != nil {
		b.adm.s.close(parkWait)
		b.adm.s, b.adm.park = nil, false
	}
}
