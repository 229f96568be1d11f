// Package etcd is the etcd engine: each key a semaphore (a mutex is a
// semaphore of one) whose slots are etcd keys on their holders' own
// leases, with a FIFO line of waiters, each on its own lease, in the style
// of the etcd client's concurrency package (but watched, fenced and
// owner-checked the way distlock needs).
//
// # Layout
//
// Everything of KEY lives under "<prefix>/<url.PathEscape(KEY)>": its
// slots under ".../" (the queue prefix, slots.go), its line of waiters
// under "...#wait/" (contend.go), its token counter at "...#token"
// (token.go). url.PathEscape encodes '/' (and '%'), so the escaped key
// never holds a '/': "<prefix>/a/" is never a prefix of the keys of KEY
// "a/b", which live under "<prefix>/a%2Fb/".
//
// # Leases
//
// etcd leases have whole-second TTLs: a TTL is granted rounded up (and a
// server may raise it to its minimum, 1.5 election timeouts), never down,
// so the lease always outlives the holder's own reckoning of validity.
package etcd

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

const (
	// gRPC keep-alive: a dead connection is noticed and replaced within
	// about keepAliveTime+keepAliveTimeout even when no request is in
	// flight. etcd servers refuse pings more often than every 5s
	// (--grpc-keepalive-min-time), so stay above that.
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 3 * time.Second

	// cleanupTimeout caps the fresh context used to leave the line.
	cleanupTimeout = 2 * time.Second
	// fallbackPoll bounds a waiter's sleep should a watch stay silent.
	fallbackPoll = 5 * time.Second
)

// Backend is the etcd engine. It implements lock.Backend.
type Backend struct {
	cli       *clientv3.Client
	prefix    string // without a trailing '/'
	endpoints string // "host:port,host:port", for messages
	user      string
	dialTO    time.Duration
	closeOnce sync.Once
	closeErr  error
}

var _ lock.Backend = (*Backend)(nil)

// New connects to the cluster and checks, within cfg.DialTimeout, that it
// answers a linearizable read under the prefix (so an unreachable cluster,
// bad credentials or a missing permission are reported here, as a
// *lock.UnavailableError, rather than at the first lock request). Bad
// settings are lock.ErrInvalid.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, lock.Invalidf("etcd: no endpoints given: use etcd://host:port")
	}
	if err := cfg.TLSFiles.Check(urlSpec, cfg.TLS); err != nil {
		return nil, err
	}
	if cfg.Username != "" && cfg.Password == "" {
		return nil, lock.Invalidf("etcd user %q has no password: put it in the URL, DISTLOCK_PASSWORD or --password-file", cfg.Username)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	b := &Backend{
		prefix:    cmp.Or(strings.TrimRight(cfg.Prefix, "/"), DefaultPrefix),
		endpoints: strings.Join(cfg.Endpoints, ","),
		user:      cfg.Username,
		dialTO:    cfg.DialTimeout,
	}

	tlsCfg, err := loadTLS(cfg)
	if err != nil {
		return nil, err
	}
	// With a user and password, clientv3.New authenticates right away,
	// bounded by DialTimeout; otherwise it does not touch the network.
	cli, err := clientv3.New(cfg.client(tlsCfg))
	if err != nil {
		return nil, b.connectError(cfg, tlsCfg, err)
	}
	b.cli = cli

	// One cheap linearizable read: needs a quorum, our credentials and read
	// permission on the prefix.
	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := cli.Get(pctx, b.prefix+"/", clientv3.WithKeysOnly()); err != nil {
		cli.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, b.connectError(cfg, tlsCfg, err)
	}
	return b, nil
}

// client is the etcd client's configuration for cfg: https to every
// endpoint with tlsCfg, else http.
func (cfg Config) client(tlsCfg *tls.Config) clientv3.Config {
	scheme := "http://"
	if tlsCfg != nil {
		scheme = "https://"
	}
	eps := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		eps[i] = scheme + ep
	}
	return clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          cfg.DialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  tlsCfg,
		Logger:               zap.NewNop(),
		// gRPC's default reconnect backoff (1s, then x1.6) left renewals
		// idle for up to a second after a server came back, which cost
		// short leases that had survived on the server. Retry sooner.
		DialOptions: append([]grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: cfg.DialTimeout,
		})}, cfg.dialOptions...),
	}
}

// loadTLS is the TLS configuration cfg asks for; nil without TLS.
func loadTLS(cfg Config) (*tls.Config, error) {
	if !cfg.TLS {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CACert != "" {
		var err error
		if tc.RootCAs, err = urlx.CAPool(cfg.CACert, "cannot read the etcd CA file: %v", "etcd CA file %s holds no PEM certificate"); err != nil {
			return nil, err
		}
	}
	if cfg.Cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, lock.Invalidf("cannot load the etcd client certificate (%s, %s): %v", cfg.Cert, cfg.Key, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// connectError explains why New failed, as a *lock.UnavailableError whose
// message names the endpoints and what to do. etcd's own errors never echo
// the password, and we never add it.
func (b *Backend) connectError(cfg Config, tlsCfg *tls.Config, err error) error {
	if why := b.refusal(err); why != "" {
		return &lock.UnavailableError{Msg: fmt.Sprintf("etcd at %s %s", b.endpoints, why), Err: err, Refused: true}
	}
	// gRPC itself only reports "context deadline exceeded".
	why := urlx.Probe(cfg.Endpoints, min(cfg.DialTimeout, time.Second), tlsCfg, nil)
	advice := "check the address and that etcd is running and has a quorum, or raise --connect-timeout"
	switch {
	case strings.Contains(why, "certificate") || strings.Contains(why, "tls:"):
		advice = "check the CA file (?cacert=) and the client certificate (?cert=&key=), and that the server certificate names the host you connect to"
	case why == "" && !cfg.TLS:
		why = "the port accepts connections but etcd did not answer"
		advice = "if etcd serves TLS there, use etcds://; otherwise check that etcd has a quorum, or raise --connect-timeout"
	case why == "":
		why = rpctypes.ErrorDesc(err)
	}
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("etcd at %s did not answer within %s (%s): %s", b.endpoints, cfg.DialTimeout, why, advice),
		Err: err,
	}
}

// refusal says what to do when err means etcd refuses us (authentication
// or permission), following "etcd at ENDPOINTS"; "" for any other error.
func (b *Backend) refusal(err error) string {
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrInvalidAuthToken),
		errors.Is(err, rpctypes.ErrInvalidAuthMgmt), errors.Is(err, rpctypes.ErrUserNotFound):
		return fmt.Sprintf("refused user %q (%s): check the user name and the password in the URL, DISTLOCK_PASSWORD or --password-file",
			b.user, rpctypes.ErrorDesc(err))
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return fmt.Sprintf("(user %q) may not read %s/ (or write it): grant its role readwrite on the prefix (etcdctl role grant-permission ROLE --prefix readwrite %s/)",
			b.user, b.prefix, b.prefix)
	case errors.Is(err, rpctypes.ErrUserEmpty):
		return "has authentication enabled: give a user in the URL (etcd://USER@host:port) and its password in DISTLOCK_PASSWORD or --password-file"
	}
	return ""
}

// Guarantee is one line on what the engine promises.
func (b *Backend) Guarantee() string { return Guarantee }

// Guarantee is what etcd promises, in one line (status's engine: line).
const Guarantee = "etcd: linearizable; exclusive through leader failover (leases expire on the server)"

// Close closes the client (idempotent).
func (b *Backend) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.cli.Close() })
	return b.closeErr
}

// The keys of KEY (# Layout above): nothing but its slots lives under
// its queue prefix; its line is outside it, so Inspect and Break never see
// a waiter. url.PathEscape escapes '#', so no escaped key holds one, and
// List skips the names that do.
func (b *Backend) queuePrefix(key string) string { return b.keyPath(key) + "/" }
func (b *Backend) linePrefix(key string) string  { return b.keyPath(key) + "#wait/" }
func (b *Backend) tokenKey(key string) string    { return b.keyPath(key) + "#token" }
func (b *Backend) keyPath(key string) string     { return b.prefix + "/" + url.PathEscape(key) }

// record is the JSON value of a contender's key: the holder's
// lock.Record, then etcd's own fields. Its TTLms is the TTL that was asked
// for: etcd leases have whole-second granularity, so the lease itself was
// granted for that TTL rounded up.
type record struct {
	lock.Record
	// Hold is set once no process renews the lease (lock.HoldMinHold,
	// lock.HoldHandle): the key then lives on a lease of its own.
	Hold string `json:"hold,omitempty"`
	// Token is the fencing token, set when the contender became holder
	// (token.go); 0 while it waits.
	Token uint64 `json:"token,omitempty"`
}

// leaseSeconds is the TTL to grant: etcd leases count whole seconds, so
// round up (never down: the lease must outlive the holder's validUntil).
func leaseSeconds(ttl time.Duration) int64 {
	return max(int64((ttl+time.Second-1)/time.Second), 1)
}

// opError wraps a failed request. Context errors stay recognisable
// (errors.Is(err, context.DeadlineExceeded)); a lease TTL etcd will not
// grant is a usage error (ttlRefused); the rest mean the engine is
// unreachable or refuses us.
func (b *Backend) opError(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcd %s: %w", op, err)
	}
	if why := b.refusal(err); why != "" {
		return &lock.UnavailableError{Msg: fmt.Sprintf("etcd at %s: %s: %s", b.endpoints, op, why), Err: err, Refused: true}
	}
	if err := ttlRefused(err); err != nil {
		return err
	}
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("etcd at %s: %s failed: %s", b.endpoints, op, rpctypes.ErrorDesc(err)),
		Err: err,
	}
}
