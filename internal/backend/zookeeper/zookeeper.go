// Package zookeeper is the ZooKeeper engine: the classic lock recipe
// (ephemeral sequential nodes, each waiter watching only its predecessor,
// as in Curator's InterProcessMutex; a semaphore's first waiter watches
// its holders, wait.go), fenced and owner-checked the way distlock needs.
// A mutex is a semaphore of one: the same line, the same code. docs/ARCHITECTURE.md ("Engines") has the layout in brief.
//
// # Layout
//
//	<chroot>/<prefix>/<escaped KEY>/lock-<limit>-<nonce>-<seq>       a contender (ephemeral, sequential)
//	<chroot>/<prefix>/<escaped KEY>/hold-<limit>-<nonce>-<gen>-<seq> a held lock with no process (TTL node)
//	<chroot>/<prefix>/<escaped KEY>/slot-<i>                         semaphore slot i of a running holder (ephemeral; data: nonce)
//	<chroot>/<prefix>/<escaped KEY>#token                            the key's last fencing token (persistent; token.go)
//
// KEY is escaped with url.PathEscape (so it never holds a '/'); the key's
// node is a container node, which the server removes once it is empty, and
// distlock removes it itself on release when it is empty. A contender whose
// create finds the key's node gone (removed in between) creates it again.
//
// The nonce is 64 random bits per contender: a node's name is only ever
// ours, so deleting or checking our node by name acts on nothing else.
// The contenders are ordered by the sequence number the server gave
// (<seq>, 10 digits); a hold node carries the sequence of the contender it
// replaced, so it keeps that place in line. With limit 1 the first
// contender holds; with --limit N the first N do (each also claims a free
// slot-<i> node, so that DISTLOCK_SLOT is unique among the holders).
//
// # Leases
//
// The lease is the contender's ZooKeeper session, whose timeout is --ttl:
// the server deletes the session's ephemeral nodes once it has not heard
// from the client for that long. A session is refused (lock.ErrInvalid) if
// the server grants a shorter timeout than --ttl (servers clamp timeouts to
// [minSessionTimeout, maxSessionTimeout], by default 2 to 20 ticks): the
// lease would be shorter than the holder counts. A longer one is safe
// (the holder stops its command by --ttl; others wait a little longer after
// a crash). Renewing is one round trip through the leader (a multi with a
// version check of our node): the session was heard from after the moment
// the request was sent, so validity counts from then, like every engine.
//
// The holders of a key hold in the order their nodes were created (the
// sequence numbers). The token is not a zxid, which starts again when
// ZooKeeper loses its data: it is max(the key's last token + 1, the wall
// clock in µs at the grant), kept in a counter node and written into the
// holder's record (token.go).
//
// # Holds
//
// A session cannot outlive its process, so a lock held with no process
// (distlock acquire, --min-hold) is a TTL node (hold-...), which needs the
// servers' zookeeper.extendedTypesEnabled=true. It is live until its
// modification time plus the hold's length, by the server's clock; the
// server deletes it some time after that (its container check runs every
// minute by default), and a new holder or the first waiter that finds an
// expired hold in the holders' places (the first limit) deletes it (compare-and-delete on its
// version), judging by the server's clock as read from a write of its own
// node. A held semaphore slot has no slot-<i> node (it was ephemeral): the
// hold node's record names the slot, and new holders pass over it
// (claimSlot in slots.go).
package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

const (
	// DefaultPrefix names the node that holds the keys when Config.Prefix is empty.
	DefaultPrefix = "distlock"
	// DefaultConnectTimeout is used when Config.ConnectTimeout is zero.
	DefaultConnectTimeout = 5 * time.Second
	// adminSession is the session timeout asked for the backend's own
	// session (status, list, break, resume): it holds no locks.
	adminSession = 10 * time.Second
	// cleanupTimeout caps the fresh context used to leave the line.
	cleanupTimeout = 2 * time.Second
)

var acl = zk.WorldACL(zk.PermAll)

// Backend is the ZooKeeper engine. It implements lock.Backend.
type Backend struct {
	servers   []string
	desc      string // "host:port,host:port", for messages
	root      string // <chroot>/<prefix>
	connectTO time.Duration
	adm       admin // the backend's own session (admin.go)

	closeOnce sync.Once
}

var _ lock.Backend = (*Backend)(nil)

// New opens the backend's own session (bounded by cfg.ConnectTimeout) and
// makes sure <chroot>/<prefix> exists, so that an unreachable ensemble or
// a refused ACL is reported here, as a *lock.UnavailableError.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if len(cfg.Servers) == 0 {
		return nil, lock.Invalidf("zookeeper: no servers given: use %s", urlForm)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	pname := escapeName(prefix)
	if cfg.Chroot == "" && pname == "zookeeper" {
		return nil, lock.Invalidf("--prefix zookeeper names ZooKeeper's own node: choose another prefix")
	}
	b := &Backend{
		servers:   cfg.Servers,
		desc:      strings.Join(cfg.Servers, ","),
		root:      cfg.Chroot + "/" + pname,
		connectTO: cfg.ConnectTimeout,
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	s, err := b.dial(cctx, adminSession)
	if err != nil {
		return nil, err
	}
	b.adm.s = s
	if err := b.ensurePath(cctx, s, b.root); err != nil {
		s.close(0)
		return nil, b.opError("create "+b.root, err)
	}
	return b, nil
}

// Guarantee is one line on what the engine promises.
func (b *Backend) Guarantee() string { return Guarantee }

// Guarantee is what ZooKeeper promises, in one line (status's engine:
// line; internal/backend's registry shows it too).
const Guarantee = "ZooKeeper: linearizable; the lease is the ZooKeeper session, exclusive through leader failover (holds need TTL nodes)"

// Close closes the backend's own session (idempotent).
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.adm.mu.Lock()
		b.closeAdminLocked(time.Second)
		b.adm.mu.Unlock()
	})
	return nil
}

// keyDir is the node under which every contender of key lives.
func (b *Backend) keyDir(key string) string { return b.root + "/" + escapeName(key) }

// escapeName makes s one valid node name: url.PathEscape encodes '/',
// '%' and every non-ASCII byte; "." and ".." are spelled out.
func escapeName(s string) string {
	e := url.PathEscape(s)
	if e == "." || e == ".." {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

// session is one ZooKeeper session on its own connection.
type session struct {
	conn  *zk.Conn
	hosts *hostProvider
	sid   int64 // the session id it started with
	// negotiated is the session timeout the server granted, in ms (read
	// from the server's connect response by the dialer).
	negotiated atomic.Int32
	// refused counts connections the server closed before it sent a
	// byte: it accepted them, then refused them (refused.go).
	refused atomic.Int32
}

// quiet drops go-zookeeper's log lines: failures reach the user as errors.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

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
	conn, _, err := zk.Connect(b.servers, timeout,
		zk.WithLogger(quiet{}), zk.WithLogInfo(false), zk.WithDialer(dialer), zk.WithHostProvider(s.hosts),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				select {
				case has <- struct{}{}:
				default:
				}
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
	if h.closed.Load() {
		return server, true
	}
	time.Sleep(pause)
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
type sniffConn struct {
	net.Conn
	s    *session
	off  int
	head [12]byte
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.closedAtOnce(n, err)
	if c.off < len(c.head) && n > 0 {
		k := copy(c.head[c.off:], p[:n])
		c.off += k
		if c.off == len(c.head) {
			if to := int32(binary.BigEndian.Uint32(c.head[8:12])); to > 0 {
				c.s.negotiated.Store(to)
			}
		}
	}
	return n, err
}

// call runs f (a go-zookeeper request, which takes no context) and returns
// its result, or ctx's error as soon as ctx ends: no engine call may stall
// its caller past its deadline. f's goroutine ends when the client answers
// or gives up on the connection.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// do is call for requests that only return an error.
func do(ctx context.Context, f func() error) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// ensurePath creates every missing node of path (absolute), as plain
// persistent nodes.
func (b *Backend) ensurePath(ctx context.Context, s *session, path string) error {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		ok, err := call(ctx, func() (bool, error) {
			ok, _, err := s.conn.Exists(p)
			return ok, err
		})
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		err = do(ctx, func() error {
			_, err := s.conn.Create(p, nil, zk.FlagPersistent, acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// ensureDir creates key's node (a container: the server removes it once
// it is empty), and the root above it when that is missing.
func (b *Backend) ensureDir(ctx context.Context, s *session, dir string) error {
	for attempt := 0; ; attempt++ {
		err := do(ctx, func() error {
			_, err := s.conn.CreateContainer(dir, nil, zk.FlagContainer, acl)
			return err
		})
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode) && attempt == 0:
			if err := b.ensurePath(ctx, s, b.root); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// tidy removes key's node if it is empty (a non-empty node is never
// deleted: the server refuses). Best effort: the server removes empty
// container nodes on its own too.
func (b *Backend) tidy(ctx context.Context, s *session, dir string) {
	_ = do(ctx, func() error { return s.conn.Delete(dir, -1) })
}

// opError wraps a failed request. Context errors stay recognisable; the
// rest mean the ensemble is unreachable, or refuses us.
func (b *Backend) opError(op string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("zookeeper %s: %w", op, err)
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return &lock.UnavailableError{
			Msg:     fmt.Sprintf("zookeeper at %s: %s: not allowed (%v): the node's ACL refuses this client; give it rights on %s", b.desc, op, err, b.root),
			Err:     err,
			Refused: true,
		}
	case isUnimplemented(err):
		return lock.Invalidf("zookeeper at %s: %s: the server does not allow TTL nodes, which distlock acquire and --min-hold need: set zookeeper.extendedTypesEnabled=true on every server", b.desc, op)
	}
	return &lock.UnavailableError{Msg: fmt.Sprintf("zookeeper at %s: %s: %v", b.desc, op, err), Err: err}
}

// record is the JSON data of a contender's (or a hold's) node: the
// holder's lock.Record, then ZooKeeper's own fields.
type record struct {
	lock.Record
	// SessionMs is the session timeout the server granted (≥ TTLms).
	SessionMs int64 `json:"session_ms,omitempty"`
	Limit     int   `json:"limit,omitempty"`
	Slot      int   `json:"slot,omitempty"`
	// Token: the fencing token, set when the contender became holder
	// (token.go; 0 while it waits), and kept by its hold node.
	// Hold nodes: the hold mode, its length from the node's mtime and
	// the TTL the node was created with.
	Hold    string `json:"hold,omitempty"`
	HoldMs  int64  `json:"hold_ms,omitempty"`
	Token   uint64 `json:"token,omitempty"`
	NodeTTL int64  `json:"node_ttl_ms,omitempty"`
}

func newRecord(req lock.Request, now time.Time) record {
	return record{Record: lock.NewRecord(req, now), Limit: limitOf(req)}
}

func (r record) encode() []byte {
	b, _ := json.Marshal(r) // plain fields: cannot fail
	return b
}

func decodeRecord(b []byte) record {
	var r record
	_ = json.Unmarshal(b, &r) // a foreign or broken node describes no one
	return r
}

func limitOf(req lock.Request) int { return max(req.Limit, 1) }

func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isUnimplemented: the server refused an operation it does not allow
// (code -6, UNIMPLEMENTED: TTL nodes without extendedTypesEnabled), which
// go-zookeeper has no error value for.
func isUnimplemented(err error) bool { return err != nil && err.Error() == "unknown error: -6" }
