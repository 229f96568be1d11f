// Package zookeeper is the ZooKeeper engine: the classic lock recipe
// (ephemeral sequential nodes in a key's line, line.go; each waiter
// watching only what can make it next, wait.go), fenced (contend.go) and
// owner-checked. A mutex is a semaphore of one. docs/ARCHITECTURE.md
// ("ZooKeeper") has the whole design; the nodes:
//
//	<chroot>/<prefix>/<escaped KEY>                                  the key's node (container; its data version counts slot claims, slot.go)
//	<chroot>/<prefix>/<escaped KEY>/lock-<limit>-<nonce>-<seq>       a contender (ephemeral, sequential)
//	<chroot>/<prefix>/<escaped KEY>/hold-<limit>-<nonce>-<gen>-<seq> a held lock with no process (TTL node, lease.go)
//	<chroot>/<prefix>/<escaped KEY>/slot-<i>                         semaphore slot i of a running holder (ephemeral; data: nonce)
//	<chroot>/<prefix>/<escaped KEY>#token                            the key's last fencing token (persistent; contend.go)
//	<chroot>/<prefix>/<escaped KEY>#ledger/<id>                      one entry of the run ledger (ledger.go)
//
// The nonce (64 random bits per contender) makes a node's name ours alone,
// so deleting or checking our node by name acts on nothing else. A slot
// node's name is reused, so its claim raises the key node's data version
// (which serves nothing else); a slot node is deleted by a multi that
// checks that version, or with its holder's lock node (slot.go).
// The lease is the contender's session, whose timeout is --ttl.
package zookeeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
