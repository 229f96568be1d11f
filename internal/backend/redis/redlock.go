package redis

// Redlock (redlock://host:port,host:port,host:port[,…]): one lock over N
// independent Redis masters, each running the single-node engine's
// scripts. A lock is held when a quorum (N/2+1) of them hold it:
//
//   - Acquire sends the try-once to every node at once, each bounded by
//     ttl/20; it is granted only with a quorum, and only if validity is
//     left: validUntil = start + ttl·(1−0.01) − 2 ms, counted from before
//     the first request (the same as start + elapsed + (ttl·0.99 − 2 ms −
//     elapsed)); the lease's Granted is start, so the keeper counts the
//     same way. A failed acquire is released on every node.
//   - The fencing token is the maximum the quorum's nodes granted, written
//     back to the quorum (settoken.lua) before the lease is returned, so
//     before the command starts; quorums intersect, so the next holder's
//     quorum includes a node whose counter is at least our token.
//   - Renew and hold need a quorum; release and break go to every node.
//   - Waiters poll (lock.Polling), woken by releases on any node: no fair
//     queue. Semaphores (--limit) are refused with 64.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

var (
	//go:embed settoken.lua
	setTokenSrc    string
	setTokenScript = lazyScript(func() string { return setTokenSrc })
)

const redlockForm = "redlock://[user:password@]host:port,host:port,host:port[,host:port...][?tls=true] (redlocks:// for TLS)"

// redlockDrift and redlockDelta are Redlock's clock-drift allowance
// (ρ = 0.01) and fixed margin (δ = 2 ms), the same as the keeper's.
const (
	redlockDrift = 0.01
	redlockDelta = 2 * time.Millisecond
)

// Redlock is a lock over independent Redis masters (see above).
type Redlock struct {
	nodes  []*Backend
	quorum int
	addrs  string
}

// RedlockConfig is what OpenRedlock needs.
type RedlockConfig struct {
	Nodes          []*goredis.Options
	Password       string // used when the URL has none
	Prefix         string
	ConnectTimeout time.Duration
}

// ParseRedlockURL parses redlock:// URLs: at least three masters.
func ParseRedlockURL(raw string) (RedlockConfig, error) {
	u, err := parseMultiHost(raw, "redlock", redlockForm)
	if err != nil {
		return RedlockConfig{}, err
	}
	if len(u.hosts) < 3 {
		return RedlockConfig{}, lock.Invalidf("redlock URL names %d Redis masters: Redlock needs at least 3 independent ones (%s)", len(u.hosts), redlockForm)
	}
	tlsCfg, err := takeTLS(&u, "redlock")
	if err != nil {
		return RedlockConfig{}, err
	}
	if strings.Trim(u.path, "/") != "" || len(u.query) > 0 {
		return RedlockConfig{}, lock.Invalidf("redlock URL takes no path, and no parameters but "+tlsParams+" (%s)", redlockForm)
	}
	var cfg RedlockConfig
	for _, h := range u.hosts {
		cfg.Nodes = append(cfg.Nodes, &goredis.Options{Addr: h, Username: u.user, Password: u.pass, TLSConfig: tlsCfg})
	}
	cfg.Password = u.pass
	return cfg, nil
}

// OpenRedlock connects to every node; at least one must answer within
// the connect timeout (so that a bad URL or password is 69 at once). A
// quorum is needed by each acquire, not here: a waiter may wait for the
// nodes to come back.
func OpenRedlock(ctx context.Context, cfg RedlockConfig) (*Redlock, error) {
	r := &Redlock{quorum: len(cfg.Nodes)/2 + 1}
	var addrs []string
	for _, o := range cfg.Nodes {
		if o.Password == "" {
			o.Password = cfg.Password
		}
		if cfg.ConnectTimeout > 0 {
			o.DialTimeout = cfg.ConnectTimeout
		}
		o.ContextTimeoutEnabled, o.MaxRetries, o.PoolSize, o.DisableIdentity = true, -1, 4, true
		r.nodes = append(r.nodes, &Backend{c: goredis.NewClient(o), prefix: cfg.Prefix, addr: "redis at " + o.Addr})
		addrs = append(addrs, o.Addr)
	}
	r.addrs = strings.Join(addrs, ",")
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	errs := r.each(ctx, timeout, func(ctx context.Context, n *Backend) error {
		if err := n.c.Ping(ctx).Err(); err != nil {
			return n.unavailable(err)
		}
		return nil
	})
	answered := 0
	for _, err := range errs {
		if err == nil {
			answered++
		}
	}
	if answered == 0 {
		r.Close()
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("redlock: none of the %d redis masters answered: %s", len(r.nodes), firstLine(errs[0].Error())), Err: errs[0], Refused: isRefused(errs[0])}
	}
	return r, nil
}

func isRefused(err error) bool {
	var ue *lock.UnavailableError
	return errors.As(err, &ue) && ue.Refused
}

// Doctor implements lock.Doctor: every node's checks, each detail naming
// its node.
func (r *Redlock) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	var out []lock.Check
	for _, n := range r.nodes {
		for _, c := range n.Doctor(ctx, req) {
			c.Detail = n.addr + ": " + c.Detail
			out = append(out, c)
		}
	}
	return out
}

// each runs f on every node at once, each call bounded by timeout, and
// returns their errors in node order.
func (r *Redlock) each(ctx context.Context, timeout time.Duration, f func(context.Context, *Backend) error) []error {
	errs := make([]error, len(r.nodes))
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = f(cctx, n)
		}()
	}
	wg.Wait()
	return errs
}

// needQuorum returns nil when a quorum of errs are nil, else an
// unavailable error naming the first failure.
func (r *Redlock) needQuorum(errs []error, what string) error {
	ok := 0
	var first error
	for _, err := range errs {
		if err == nil {
			ok++
		} else if first == nil {
			first = err
		}
	}
	if ok >= r.quorum {
		return nil
	}
	var refused bool
	var ue *lock.UnavailableError
	if errors.As(first, &ue) {
		refused = ue.Refused
	}
	return &lock.UnavailableError{
		Msg:     fmt.Sprintf("redlock: only %d of %d redis masters %s (a quorum is %d): %s", ok, len(r.nodes), what, r.quorum, firstLine(first.Error())),
		Err:     first,
		Refused: refused,
	}
}

// nodeTimeout bounds one node's part in an acquire or renewal: ttl/20.
func nodeTimeout(ttl time.Duration) time.Duration { return max(ttl/20, time.Millisecond) }

// Guarantee implements lock.Backend.
func (r *Redlock) Guarantee() string {
	return fmt.Sprintf("Redlock over %d Redis masters: a lock needs %d of them; exclusive while the nodes' clocks run at the same rate and no process pauses past the margin", len(r.nodes), r.quorum)
}

// Close implements lock.Backend.
func (r *Redlock) Close() error {
	var errs []error
	for _, n := range r.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// Contend implements lock.Backend: waiters poll, woken by a release on
// any node.
func (r *Redlock) Contend(req lock.Request) lock.Contender {
	return &lock.Polling{
		Cap: time.Second,
		TryOnce: func(ctx context.Context) (lock.Lease, time.Duration, error) {
			l, err := r.acquire(ctx, req)
			return l, lock.HolderExpiry(err), err
		},
		Wake: func(ctx context.Context) (<-chan struct{}, func(), error) { return r.notify(ctx, req.Key) },
	}
}

// acquire is one Redlock attempt (see the top of this file).
func (r *Redlock) acquire(ctx context.Context, req lock.Request) (lock.Lease, error) {
	if req.Limit > 1 {
		return nil, lock.Invalidf("--limit is not supported on redlock://: a semaphore's slots cannot be kept consistent across independent masters; use --limit on redis:// or etcd://")
	}
	start := time.Now()
	leases := make([]*Lease, len(r.nodes))
	errs := r.each(ctx, nodeTimeout(req.TTL), func(ctx context.Context, n *Backend) error {
		l, err := n.tryOnce(ctx, req)
		if err == nil {
			leases[i(r, n)] = l.(*Lease)
		}
		return err
	})
	validity := time.Duration(float64(req.TTL)*(1-redlockDrift)) - redlockDelta - time.Since(start)
	granted := 0
	var tok uint64
	for _, l := range leases {
		if l != nil {
			granted++
			tok = max(tok, l.token)
		}
	}
	if granted >= r.quorum && validity > 0 {
		// The token: the quorum's maximum, written back to the quorum.
		werrs := r.each(ctx, nodeTimeout(req.TTL), func(ctx context.Context, n *Backend) error {
			l := leases[i(r, n)]
			if l == nil {
				return errors.New("not granted here")
			}
			res, err := setTokenScript().Run(ctx, n.c, []string{n.lockKey(req.Key), n.tokenKey(req.Key)}, req.Owner, strconv.FormatUint(tok, 10)).Int()
			if err != nil {
				return n.unavailable(err)
			}
			if res != 1 {
				return lock.ErrNotHeld
			}
			return nil
		})
		if validity = time.Duration(float64(req.TTL)*(1-redlockDrift)) - redlockDelta - time.Since(start); r.needQuorum(werrs, "took the fencing token") == nil && validity > 0 {
			return &redlockLease{r: r, key: req.Key, owner: req.Owner, token: tok, ttl: req.TTL, granted: start}, nil
		}
	}
	r.releaseAll(ctx, req.Key, req.Owner)
	// No quorum: busy if any node has another holder, else unavailable.
	for _, err := range errs {
		var busy *lock.BusyError
		if errors.As(err, &busy) {
			return nil, busy
		}
		if errors.Is(err, lock.ErrInvalid) {
			return nil, err
		}
	}
	if granted >= r.quorum {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("redlock: %s was granted by %d of %d redis masters but too late (the TTL's validity was used up): raise --ttl or check the latency to %s", req.Key, granted, len(r.nodes), r.addrs)}
	}
	return nil, r.needQuorum(errs, "granted "+req.Key)
}

// i is n's index in r.nodes.
func i(r *Redlock, n *Backend) int {
	for k, m := range r.nodes {
		if m == n {
			return k
		}
	}
	panic("redlock: not one of our nodes")
}

// releaseAll releases key on every node where owner holds it, on a fresh
// short context (ctx may have ended).
func (r *Redlock) releaseAll(ctx context.Context, key, owner string) (released int, errs []error) {
	cctx := context.WithoutCancel(ctx)
	errs = r.each(cctx, 2*time.Second, func(ctx context.Context, n *Backend) error {
		return (&Lease{b: n, key: key, owner: owner}).Release(ctx)
	})
	for _, err := range errs {
		if err == nil {
			released++
		}
	}
	return released, errs
}

// notify wakes a waiter when the key is released on any node that answers.
func (r *Redlock) notify(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	stops := []func(){func() { close(done) }}
	errs := make([]error, len(r.nodes))
	for k, n := range r.nodes {
		ch, stop, err := n.notify(ctx, key)
		if err != nil {
			errs[k] = err
			continue
		}
		stops = append(stops, stop)
		go func() {
			for {
				select {
				case <-ch:
				case <-done:
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}()
	}
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	if len(stops) == 1 { // no node answered
		stopAll()
		return nil, nil, r.needQuorum(errs, "answered")
	}
	return out, stopAll, nil
}

// Inspect implements lock.Backend: the key is held when one owner holds
// it on a quorum of nodes; it expires when the quorum-th longest of those
// leases does.
func (r *Redlock) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	holders := make([]*lock.Holder, len(r.nodes))
	errs := r.each(ctx, 5*time.Second, func(ctx context.Context, n *Backend) error {
		h, held, err := n.Inspect(ctx, key)
		if held {
			holders[i(r, n)] = &h
		}
		return err
	})
	if err := r.needQuorum(errs, "answered"); err != nil {
		return lock.Holder{}, false, err
	}
	h, ok := r.quorumHolder(holders)
	return h, ok, nil
}

// quorumHolder is the holder that a quorum of the nodes' holders name.
func (r *Redlock) quorumHolder(holders []*lock.Holder) (lock.Holder, bool) {
	byOwner := map[string][]lock.Holder{}
	for _, h := range holders {
		if h != nil {
			byOwner[h.Owner] = append(byOwner[h.Owner], *h)
		}
	}
	for _, hs := range byOwner {
		if len(hs) < r.quorum {
			continue
		}
		sort.Slice(hs, func(a, b int) bool { return hs[a].ExpiresIn > hs[b].ExpiresIn })
		h := hs[r.quorum-1]
		for _, x := range hs {
			h.Token = max(h.Token, x.Token)
		}
		return h, true
	}
	return lock.Holder{}, false
}

// List implements lock.Backend: the keys a quorum holds.
func (r *Redlock) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	lists := make([][]lock.Holder, len(r.nodes))
	errs := r.each(ctx, 30*time.Second, func(ctx context.Context, n *Backend) error {
		hs, err := n.List(ctx, keyPrefix)
		lists[i(r, n)] = hs
		return err
	})
	if err := r.needQuorum(errs, "answered"); err != nil {
		return nil, err
	}
	byKey := map[string][]*lock.Holder{}
	for k, hs := range lists {
		for _, h := range hs {
			if byKey[h.Key] == nil {
				byKey[h.Key] = make([]*lock.Holder, len(r.nodes))
			}
			byKey[h.Key][k] = &h
		}
	}
	var out []lock.Holder
	for _, hs := range byKey {
		if h, ok := r.quorumHolder(hs); ok {
			out = append(out, h)
		}
	}
	lock.SortHolders(out)
	return out, nil
}

// Break implements lock.Backend: on every node, by token. Nodes that did
// not take the written-back token (the holder's grant there failed to be
// counted) carry their own; with a token, a node whose holder has the same
// owner as a node that matched is broken too.
func (r *Redlock) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	h, held, err := r.Inspect(ctx, key)
	if err != nil {
		return lock.Holder{}, err
	}
	if !held {
		// Leftovers of failed attempts expire by themselves; nothing holds.
		return lock.Holder{}, lock.ErrNotHeld
	}
	if token != 0 && h.Token != token {
		return h, &lock.BusyError{Holder: h}
	}
	errs := r.each(ctx, 5*time.Second, func(ctx context.Context, n *Backend) error {
		nh, held, err := n.Inspect(ctx, key)
		if err != nil || !held || nh.Owner != h.Owner {
			return err
		}
		_, err = n.Break(ctx, key, nh.Token)
		if errors.Is(err, lock.ErrNotHeld) {
			return nil
		}
		return err
	})
	if err := r.needQuorum(errs, "broke the lock"); err != nil {
		return h, err
	}
	return h, nil
}

// Resume implements lock.Backend: a quorum of nodes must name h's owner
// and token.
func (r *Redlock) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	errs := r.each(ctx, 5*time.Second, func(ctx context.Context, n *Backend) error {
		_, err := n.Resume(ctx, h)
		return err
	})
	notHeld := 0
	for _, err := range errs {
		if errors.Is(err, lock.ErrNotHeld) {
			notHeld++
		}
	}
	if len(r.nodes)-notHeld < r.quorum {
		return nil, lock.ErrNotHeld
	}
	if err := r.needQuorum(errs, "hold this handle's lock"); err != nil {
		return nil, err
	}
	return &redlockLease{r: r, key: h.Key, owner: h.Owner, token: h.Token, ttl: h.TTL(), granted: granted}, nil
}

// redlockLease is a lock held on a quorum of the nodes.
type redlockLease struct {
	r       *Redlock
	key     string
	owner   string
	token   uint64
	ttl     time.Duration
	granted time.Time
}

func (l *redlockLease) Key() string             { return l.key }
func (l *redlockLease) Token() uint64           { return l.token }
func (l *redlockLease) Owner() string           { return l.owner }
func (l *redlockLease) Granted() time.Time      { return l.granted }
func (l *redlockLease) Alerts() <-chan struct{} { return nil }

func (l *redlockLease) node(n *Backend) *Lease {
	return &Lease{b: n, key: l.key, owner: l.owner, token: l.token, ttl: l.ttl}
}

// quorumOf turns the nodes' answers to an owner-checked change into the
// lease's: nil with a quorum; ErrNotHeld once too many nodes answered "not
// ours" for a quorum to be possible; else a (transient) error.
func (l *redlockLease) quorumOf(errs []error, what string) error {
	notHeld := 0
	for _, err := range errs {
		if errors.Is(err, lock.ErrNotHeld) {
			notHeld++
		}
	}
	if len(errs)-notHeld < l.r.quorum {
		return lock.ErrNotHeld
	}
	return l.r.needQuorum(errs, what)
}

// Renew implements lock.Lease: a quorum must extend it.
func (l *redlockLease) Renew(ctx context.Context) error {
	errs := l.r.each(ctx, nodeTimeout(l.ttl), func(ctx context.Context, n *Backend) error {
		return l.node(n).Renew(ctx)
	})
	return l.quorumOf(errs, "renewed "+l.key)
}

// Release implements lock.Lease: on every node.
func (l *redlockLease) Release(ctx context.Context) error {
	released, errs := l.r.releaseAll(ctx, l.key, l.owner)
	if released > 0 {
		return nil
	}
	return l.quorumOf(errs, "released "+l.key)
}

// Hold implements lock.Lease: a quorum must keep it.
func (l *redlockLease) Hold(ctx context.Context, d time.Duration, mode string) error {
	errs := l.r.each(ctx, 5*time.Second, func(ctx context.Context, n *Backend) error {
		return l.node(n).Hold(ctx, d, mode)
	})
	if err := l.quorumOf(errs, "kept "+l.key); err != nil {
		return err
	}
	l.ttl = d
	return nil
}

// Handle implements lock.Lease.
func (l *redlockLease) Handle() lock.Handle {
	return lock.Handle{Key: l.key, Owner: l.owner, Token: l.token, TTLms: l.ttl.Milliseconds()}
}
