// Package zookeeper is the ZooKeeper engine: the classic lock recipe
// (ephemeral sequential nodes in a key's line, line.go; each waiter
// watching only what can make it next, wait.go), fenced (contend.go) and
// owner-checked. A mutex is a semaphore of one. docs/ARCHITECTURE.md
// ("ZooKeeper") has the whole design; the nodes:
//
//	<chroot>/<prefix>/<escaped KEY>/lock-<limit>-<nonce>-<seq>       a contender (ephemeral, sequential)
//	<chroot>/<prefix>/<escaped KEY>/hold-<limit>-<nonce>-<gen>-<seq> a held lock with no process (TTL node, lease.go)
//	<chroot>/<prefix>/<escaped KEY>/slot-<i>                         semaphore slot i of a running holder (ephemeral; data: nonce)
//	<chroot>/<prefix>/<escaped KEY>#token                            the key's last fencing token (persistent; contend.go)
//	<chroot>/<prefix>/<escaped KEY>#ledger/<id>                      one entry of the run ledger (ledger.go)
//
// The nonce (64 random bits per contender) makes a node's name ours alone,
// so deleting or checking our node by name acts on nothing else. The
// lease is the contender's session, whose timeout is --ttl.
package zookeeper

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/internal/lock"
)

// DefaultPrefix and DefaultConnectTimeout stand for an empty
// Config.Prefix and a zero Config.ConnectTimeout.
const (
	DefaultPrefix         = "distlock"
	DefaultConnectTimeout = 5 * time.Second
)

var acl = zk.WorldACL(zk.PermAll)

// Backend is the ZooKeeper engine. It implements lock.Backend.
type Backend struct {
	servers   []string
	desc      string // "host:port,host:port", for messages
	root      string // <chroot>/<prefix>
	connectTO time.Duration
	adm       admin // the backend's own session (session.go)
	closeOnce sync.Once
}

// New opens the backend's own session (bounded by cfg.ConnectTimeout) and
// makes sure <chroot>/<prefix> exists, so that an unreachable ensemble or
// a refused ACL is reported here, as a *lock.UnavailableError.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if len(cfg.Servers) == 0 {
		return nil, lock.Invalidf("zookeeper: no servers given: use %s", urlForm)
	}
	pname := escapeName(cmp.Or(cfg.Prefix, DefaultPrefix))
	if cfg.Chroot == "" && pname == "zookeeper" {
		return nil, lock.Invalidf("--prefix zookeeper names ZooKeeper's own node: choose another prefix")
	}
	b := &Backend{servers: cfg.Servers, desc: strings.Join(cfg.Servers, ","), root: cfg.Chroot + "/" + pname,
		connectTO: cfg.ConnectTimeout}
	if b.connectTO <= 0 {
		b.connectTO = DefaultConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, b.connectTO)
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

// Guarantee is what ZooKeeper promises, in one line.
const Guarantee = "ZooKeeper: linearizable; the lease is the ZooKeeper session, exclusive through leader failover (holds need TTL nodes)"

// Guarantee implements lock.Backend.
func (b *Backend) Guarantee() string { return Guarantee }

// Close closes the backend's own session (idempotent).
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.adm.mu.Lock()
		defer b.adm.mu.Unlock()
		if b.adm.s != nil {
			b.adm.s.close(time.Second)
			b.adm.s = nil
		}
	})
	return nil
}

var (
	_ lock.Backend = (*Backend)(nil)
	_ lock.Doctor  = (*Backend)(nil)
	_ lock.Ledger  = (*Backend)(nil)
)

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

// call2 is call for requests that return two values.
func call2[A, B any](ctx context.Context, f func() (A, B, error)) (A, B, error) {
	type pair struct {
		a A
		b B
	}
	p, err := call(ctx, func() (pair, error) {
		a, b, err := f()
		return pair{a, b}, err
	})
	return p.a, p.b, err
}

// The engine's operations on one session, each bounded by its context:
// a key's line, holds, slots, token counter and ledger are made of these.

func (s *session) create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	return call(ctx, func() (string, error) { return s.conn.Create(path, data, flags, acl) })
}

func (s *session) set(ctx context.Context, path string, data []byte) (*zk.Stat, error) {
	return call(ctx, func() (*zk.Stat, error) { return s.conn.Set(path, data, -1) })
}

// exists stats a node; ok is false when it is missing.
func (s *session) exists(ctx context.Context, path string) (ok bool, st *zk.Stat, err error) {
	return call2(ctx, func() (bool, *zk.Stat, error) { return s.conn.Exists(path) })
}

// remove deletes path at version (-1: any).
func (s *session) remove(ctx context.Context, path string, version int32) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(path, version) })
	return err
}

// get reads a node, its data decoded as a record; ok is false when it is
// gone.
func (s *session) get(ctx context.Context, path string) (d described, ok bool, err error) {
	data, stat, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.conn.Get(path) })
	if err != nil {
		return described{}, false, ignore(err, zk.ErrNoNode)
	}
	return described{rec: decodeRecord(data), raw: data, stat: stat}, true, nil
}

// getAll reads the node at path(item) of each item all at once
// (go-zookeeper pipelines requests on one connection); one gone has a nil
// stat. The error is the first one's in items' order.
func getAll[T any](ctx context.Context, s *session, items []T, path func(T) string) ([]described, error) {
	ds, errs := make([]described, len(items)), make([]error, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Go(func() { ds[i], _, errs[i] = s.get(ctx, path(item)) })
	}
	wg.Wait()
	return ds, cmp.Or(errs...)
}

// described is a node as get read it.
type described struct {
	rec  record
	raw  []byte
	stat *zk.Stat
}

// children lists dir with its cversion, which every create and delete of
// a child raises; a missing dir is an empty line (cversion -1).
func (s *session) children(ctx context.Context, dir string) ([]string, int32, error) {
	names, st, err := call2(ctx, func() ([]string, *zk.Stat, error) { return s.conn.Children(dir) })
	if err != nil {
		return nil, -1, ignore(err, zk.ErrNoNode)
	}
	return names, st.Cversion, nil
}

// multi runs ops in one transaction; the error is the failing op's (the
// others of a failed multi answer "rolled back").
func (s *session) multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
	for _, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) && r.Error.Error() != "unknown error: -2" {
			return res, r.Error
		}
	}
	return res, err
}

// ignore is err, or nil when err is one of those named.
func ignore(err error, these ...error) error {
	for _, e := range these {
		if errors.Is(err, e) {
			return nil
		}
	}
	return err
}

// ensurePath creates every missing node of path (absolute), as plain
// persistent nodes.
func (b *Backend) ensurePath(ctx context.Context, s *session, path string) error {
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + part
		ok, _, err := s.exists(ctx, p)
		if err == nil && !ok {
			_, err = s.create(ctx, p, nil, zk.FlagPersistent)
		}
		if ignore(err, zk.ErrNodeExists) != nil {
			return err
		}
	}
	return nil
}

// ensureDir creates dir, a key's node or its ledger's (a container: the
// server removes it once it is empty), and the root above it when that is
// missing.
func (b *Backend) ensureDir(ctx context.Context, s *session, dir string) error {
	create := func() error {
		_, err := call(ctx, func() (string, error) { return s.conn.CreateContainer(dir, nil, zk.FlagContainer, acl) })
		return err
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) {
		if err = b.ensurePath(ctx, s, b.root); err == nil {
			err = create()
		}
	}
	return ignore(err, zk.ErrNodeExists)
}

// tidy removes key's node if it is empty (a non-empty node is never
// deleted: the server refuses). Best effort: the server removes empty
// container nodes on its own too.
func (b *Backend) tidy(ctx context.Context, s *session, dir string) { _ = s.remove(ctx, dir, -1) }

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

// isUnimplemented: the server refused an operation it does not allow
// (code -6, UNIMPLEMENTED: TTL nodes without extendedTypesEnabled), which
// go-zookeeper has no error value for.
func isUnimplemented(err error) bool { return err != nil && err.Error() == "unknown error: -6" }

// record is the JSON data of a contender's (or a hold's) node: the
// holder's lock.Record, then ZooKeeper's own fields: the session timeout
// granted (>= TTLms); the token, set when the contender became holder (0
// while it waits); a hold node's mode, length from its mtime and node TTL.
type record struct {
	lock.Record
	SessionMs int64  `json:"session_ms,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Slot      int    `json:"slot,omitempty"`
	Hold      string `json:"hold,omitempty"`
	HoldMs    int64  `json:"hold_ms,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	NodeTTL   int64  `json:"node_ttl_ms,omitempty"`
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
