// Package redis is the Redis engine: the lock is a hash with a TTL holding
// the holder's metadata, a counter key with no TTL feeds fencing tokens, and
// releases are published on a channel so that waiters wake at once. Every
// mutation is a Lua script, so it is atomic on the server.
package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// Backend is one Redis deployment: a single server (perhaps with replicas
// it does not know of), a master found through Sentinel, or a Cluster.
// The engine is the same on each: the same scripts, on keys whose hash
// tag keeps every key of one lock in one cluster slot.
type Backend struct {
	c      goredis.UniversalClient
	prefix string
	addr   string // "redis at host:port" and the like, for messages
	topo   Topology
	// wait is how many replicas must acknowledge every grant and renewal
	// (replicas.go); 0 does not wait.
	wait int
	// redlock: this is one of a Redlock's masters (doctor judges its
	// persistence as Redlock needs it).
	redlock bool
	// nodeOptions connects to one server of a Sentinel deployment with
	// the master's credentials (doctor reads the replicas' clocks); nil
	// on the other topologies.
	nodeOptions func(addr string) *goredis.Options
}

// New connects and checks the server answers within cfg.ConnectTimeout.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	b, dial := open(cfg)
	pctx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	if err := b.c.Ping(pctx).Err(); err != nil {
		b.c.Close()
		return nil, b.unavailable(err)
	}
	return b, nil
}

// open makes cfg's client, and returns the dial timeout, which bounds the
// first PING. Without ContextTimeoutEnabled go-redis ignores context
// deadlines on socket reads, and a renew against a paused server blocks
// for ReadTimeout (docs/ARCHITECTURE.md, "Timing"). MaxRetries -1:
// distlock has its own retry policy; a blind retry of a script whose
// reply was lost must not hide the real timing from the renewer.
func open(cfg Config) (*Backend, time.Duration) {
	b := &Backend{prefix: cfg.Prefix, addr: cfg.addr, topo: cfg.Topology, wait: cfg.Wait}
	var dial time.Duration
	switch {
	case cfg.Failover != nil:
		o := cfg.Failover
		dial = cfg.policy(&o.Password, &o.DialTimeout, &o.ContextTimeoutEnabled, &o.MaxRetries, &o.PoolSize, &o.DisableIdentity)
		b.c = goredis.NewFailoverClient(o)
		b.nodeOptions = func(addr string) *goredis.Options {
			return &goredis.Options{Addr: addr, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
				DialTimeout: dial, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1, DisableIdentity: true}
		}
	case cfg.Cluster != nil:
		o := cfg.Cluster
		dial = cfg.policy(&o.Password, &o.DialTimeout, &o.ContextTimeoutEnabled, &o.MaxRetries, &o.PoolSize, &o.DisableIdentity)
		b.c = goredis.NewClusterClient(o)
	default:
		o := cfg.Options
		dial = cfg.policy(&o.Password, &o.DialTimeout, &o.ContextTimeoutEnabled, &o.MaxRetries, &o.PoolSize, &o.DisableIdentity)
		if b.addr == "" {
			b.addr = "redis at " + o.Addr
		}
		b.c = goredis.NewClient(o)
	}
	return b, dial
}

// policy sets the fields of a topology's client options (go-redis has one
// options type each) that New decides: cfg's password where the URL gave
// none, cfg's connect timeout, context deadlines honoured, no retries, a
// pool of 4, no CLIENT SETINFO. It returns the dial timeout, which bounds
// the first PING.
func (cfg Config) policy(password *string, dialTimeout *time.Duration, ctxTimeout *bool, maxRetries, poolSize *int, noIdentity *bool) time.Duration {
	if *password == "" {
		*password = cfg.Password
	}
	if cfg.ConnectTimeout > 0 {
		*dialTimeout = cfg.ConnectTimeout
	}
	*ctxTimeout, *maxRetries, *poolSize, *noIdentity = true, -1, 4, true
	return cmp.Or(*dialTimeout, 5*time.Second)
}

// unavailable turns a connection or auth failure into a one-line error
// that says what to do. go-redis errors never hold the password.
func (b *Backend) unavailable(err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "CROSSSLOT"):
		// The hash tag of "<prefix>:{KEY}" is what lies between its first
		// '{' and the next '}': empty when KEY starts with '}' (or the
		// prefix holds "{}"), and then each key of the lock has a slot of
		// its own.
		return lock.Invalidf("%s cannot keep this lock's keys in one hash slot: on a Redis Cluster a key must not start with '}', nor --prefix hold \"{}\"", b.addr)
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "invalid password"):
		return &lock.UnavailableError{Msg: fmt.Sprintf("%s refused the credentials (%s): check the user and password in --backend, DISTLOCK_PASSWORD or --password-file", b.addr, lock.FirstLine(err)), Err: err, Refused: true}
	case errors.Is(err, context.DeadlineExceeded):
		return &lock.UnavailableError{Msg: fmt.Sprintf("%s did not answer in time: check that it is up and reachable, or raise --connect-timeout", b.addr), Err: err}
	default:
		return &lock.UnavailableError{Msg: fmt.Sprintf("cannot reach %s: %s: check --backend and that the server is up", b.addr, lock.FirstLine(err)), Err: err}
	}
}

// Key names share the hash tag {key} so that lock, counter and channel live
// in one cluster slot.
func (b *Backend) lockKey(key string) string  { return b.prefix + ":{" + key + "}" }
func (b *Backend) tokenKey(key string) string { return b.lockKey(key) + ":token" }
func (b *Backend) channel(key string) string  { return b.lockKey(key) + ":released" }

// Guarantee implements lock.Backend: what the topology promises with
// b.wait replicas acknowledging every grant and renewal, in one line
// (status's engine: line; docs/GUARANTEES.md, "Redis topologies").
func (b *Backend) Guarantee() string {
	if b.topo == Sentinel && b.wait > 0 {
		return fmt.Sprintf("Redis Sentinel with WAIT %d: every grant and renewal reached %d replicas; a failover to a replica that had not can still grant this lock twice", b.wait, b.wait)
	}
	return [...]string{
		Single:   "single Redis: exclusive while this node lives; a failover to an async replica can grant the lock twice",
		Sentinel: "Redis Sentinel without WAIT: a failover can grant this lock twice",
		Cluster:  "Redis Cluster: each lock lives on one master; a failover to its async replica can grant it twice",
	}[b.topo]
}

// Close implements lock.Backend.
func (b *Backend) Close() error { return b.c.Close() }

// go-redis logs dial failures to stderr by itself; distlock reports them
// once, as one line, through its own errors.
func init() { goredis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
