// Package consul is the Consul engine: a FIFO line of contenders per key
// in Consul's KV store, each entry acquired by the contender's own session
// (a TTL session with behavior=delete, so that it vanishes with it), with
// fencing tokens by distlock's one token rule.
//
// # Layout
//
// Under root (the URL's path, then --prefix: "distlock" by default):
//
//	<root>/<url.PathEscape(KEY)>/<session ID>   one entry per contender; value: its record (JSON)
//	<root>/<url.PathEscape(KEY)>#token          the key's last token (no session)
//	<root>/<url.PathEscape(KEY)>#slot/<i>       a semaphore slot, acquired by its holder's session
//	<root>#ledger/<url.PathEscape(KEY)>/<id>    the run ledger's entries (lock.Ledger)
//
// The line is the entries in order of their CreateIndex (Raft indexes only
// rise). The first limit entries hold the lock (a mutex: the first); an
// entry that reached that place takes over by writing its token into its
// record (waiter.Take, contend.go). url.PathEscape escapes '/' and '#', so no escaped
// key holds either: "#token" and "#slot/" are ours alone.
//
// # Sessions and time
//
// A session's TTL is --ttl. Consul promises never to expire a session
// before its TTL has passed since the server took its last renewal, and
// may keep it up to twice that (its timers run for 2×TTL). distlock counts
// validity from just before each renewal is sent, so its command is gone
// before the earliest moment the session could expire and anyone else
// take the lock; a holder that died frees the key after between TTL and
// 2×TTL, counted from the last leader election when one came meanwhile:
// the timers live on the leader alone, and a new leader starts every
// session's afresh (a cluster whose servers were all paused past the
// leader lease elects one when they resume). Sessions carry no health
// checks, live on a catalog node of distlock's own (sessionNode) and have
// a lock-delay of 1 ms (lockDelay).
package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

const (
	// DefaultPrefix namespaces lock keys when Config.Prefix is empty.
	DefaultPrefix = "distlock"
	// DefaultConnectTimeout is used when Config.ConnectTimeout is zero.
	DefaultConnectTimeout = 5 * time.Second
)

// Guarantee is status's engine: line for Consul.
const Guarantee = "Consul: linearizable (Raft); one holder at a time, across a leader's failover; a holder that dies frees the key after TTL to 2×TTL"

// Backend is the Consul engine.
type Backend struct {
	clients []*api.Client  // one per server of the URL
	https   []*http.Client // theirs (clockCheck asks one directly)
	cur     atomic.Int32   // the server requests go to now
	addrs   []string
	scheme  string
	root    string // the KV prefix, without a trailing '/'
	connTO  time.Duration
}

var (
	_ lock.Backend       = (*Backend)(nil)
	_ lock.Ledger        = (*Backend)(nil)
	_ lock.SlotInspector = (*Backend)(nil)
	_ lock.Doctor        = (*Backend)(nil)
)

// New makes a client per server and checks, within cfg.ConnectTimeout,
// that one of them answers a read under the prefix (an unreachable
// cluster, a bad token or a missing permission are reported here, as a
// *lock.UnavailableError).
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if len(cfg.Addrs) == 0 {
		return nil, lock.Invalidf("consul: no servers given: use %s", urlForm)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	b := &Backend{addrs: cfg.Addrs, root: cfg.root(), connTO: cfg.ConnectTimeout}
	for _, addr := range cfg.Addrs {
		ac := cfg.apiConfig(addr)
		hc, err := api.NewHttpClient(ac.Transport, ac.TLSConfig)
		if err != nil {
			return nil, lock.Invalidf("consul TLS: %v", err)
		}
		ac.HttpClient, b.scheme = hc, ac.Scheme
		c, err := api.NewClient(ac)
		if err != nil {
			return nil, lock.Invalidf("consul: %v", err)
		}
		b.clients, b.https = append(b.clients, c), append(b.https, hc)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	var err error
	for range b.clients { // each server once, until one answers
		if err = b.call(func(c *api.Client) (err error) {
			_, _, err = c.KV().Keys(b.root+"/", "/", qo(cctx))
			return err
		}); err == nil {
			return b, nil
		}
		if refused(err) || cctx.Err() != nil {
			break
		}
	}
	return nil, b.opError("connect", err)
}

// Guarantee implements lock.Backend.
func (b *Backend) Guarantee() string { return Guarantee }

// Close implements lock.Backend: it closes idle connections.
func (b *Backend) Close() error {
	for _, hc := range b.https {
		hc.CloseIdleConnections()
	}
	return nil
}

// KEY's line directory, token counter, slot directory and slot i (the
// layout above).
func (b *Backend) lineDir(key string) string        { return b.root + "/" + url.PathEscape(key) + "/" }
func (b *Backend) tokenKey(key string) string       { return b.root + "/" + url.PathEscape(key) + "#token" }
func (b *Backend) slotDir(key string) string        { return b.root + "/" + url.PathEscape(key) + "#slot/" }
func (b *Backend) slotKey(key string, i int) string { return b.slotDir(key) + strconv.Itoa(i) }

// call runs f against the current server; when the server did not answer
// (refused, reset, timed out), later calls go to the next server of the
// URL, so that a client follows a dead server's peers.
func (b *Backend) call(f func(c *api.Client) error) error {
	i := b.cur.Load()
	err := f(b.clients[i])
	if err != nil && !answered(err) {
		b.cur.CompareAndSwap(i, (i+1)%int32(len(b.clients)))
	}
	return err
}

// list reads the keys under prefix (q: qo(ctx), or a blocking query).
func (b *Backend) list(prefix string, q *api.QueryOptions) (kvs api.KVPairs, meta *api.QueryMeta, err error) {
	err = b.call(func(c *api.Client) (err error) {
		kvs, meta, err = c.KV().List(prefix, q)
		return err
	})
	return kvs, meta, err
}

// qo and wo bind a request to ctx.
func qo(ctx context.Context) *api.QueryOptions { return (&api.QueryOptions{}).WithContext(ctx) }
func wo(ctx context.Context) *api.WriteOptions { return (&api.WriteOptions{}).WithContext(ctx) }

// answered: err is Consul's answer (an HTTP status), not a failure to
// reach it.
func answered(err error) bool {
	var se api.StatusError
	s := err.Error()
	return errors.As(err, &se) || strings.Contains(s, "Unexpected response code") || strings.HasPrefix(s, "Failed request")
}

// refused: Consul answered that the token may not do this (an HTTP 401 or
// 403, or a transaction's "Permission denied"); never a failure to reach
// it, whatever numbers its message holds.
func refused(err error) bool {
	var se api.StatusError
	if errors.As(err, &se) {
		return se.Code == 401 || se.Code == 403
	}
	s := err.Error()
	return strings.Contains(s, "response code: 403") || strings.Contains(s, "response code: 401") ||
		strings.Contains(s, "Permission denied") || strings.Contains(s, "ACL not found")
}

// opError wraps a failed request as a *lock.UnavailableError naming op and
// the servers (of a failure to dial, only its cause: the Go HTTP client
// repeats the URL); a refusal (ACL) is marked so that nobody retries it.
func (b *Backend) opError(op string, err error) error {
	why := err.Error()
	if i := strings.LastIndex(why, ": "); i >= 0 && strings.Contains(why, "dial tcp") {
		why = why[i+2:]
	}
	msg := fmt.Sprintf("consul at %s: %s: %s", strings.Join(b.addrs, ","), op, why)
	if refused(err) {
		msg += " (check the ACL token: the URL's password, DISTLOCK_PASSWORD, --password-file or CONSUL_HTTP_TOKEN)"
	}
	return &lock.UnavailableError{Msg: msg, Err: err, Refused: refused(err)}
}
