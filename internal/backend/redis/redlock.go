package redis

// Redlock (redlock://host:port,host:port,host:port[,…]): one lock over N
// independent Redis masters, each a single-node Backend running the same
// scripts; a lock is held when a quorum (N/2+1) of them hold it. The design
// (validity, the written-back fencing token, the delayed restart, renewals
// that take the key back) is in docs/ARCHITECTURE.md, "Redis"; each
// function below says its part. Waiters poll (lock.Polling), woken by
// releases on any node: no fair queue. Semaphores (--limit) are refused
// with 64.

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

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// Redlock's try-once is acquire.lua (limit 1, no place) wrapped in the
// delayed restart's bookkeeping (redlock_lib.lua): KEYS[1..6] and ARGV as
// acquire.lua's, KEYS[7] the boot marker, KEYS[8] the TTL ledger. It
// returns {marker age ms, longest live TTL ms (before this call),
// acquire.lua's reply}.
const (
	redlockAcquireHead = `
local rl_now = now_ms()
local rl_age, rl_longest = rl_state(KEYS[7], KEYS[8], rl_now)
local function rl_try_once()
`
	redlockAcquireTail = `
end
local rl_res = rl_try_once()
if rl_res[1] == 1 then rl_note(KEYS[8], rl_now, tonumber(ARGV[2])) end
return {rl_age, rl_longest, rl_res}
`
)

const redlockForm = "redlock://[user:password@]host:port,host:port,host:port[,host:port...][?tls=true] (redlocks:// for TLS)"

// Redlock is a lock over independent Redis masters (see above).
type Redlock struct {
	nodes  []*Backend
	quorum int
	addrs  string
	// ledgerVer versions the run ledger's writes (redlock_ledger.go).
	ledgerVer ledgerClock
}

// RedlockConfig is what OpenRedlock needs.
type RedlockConfig struct {
	Nodes          []*goredis.Options
	Password       string // used when the URL has none
	Prefix         string
	ConnectTimeout time.Duration
}

// String names the masters and shows none of the config's passwords, so
// that no %v of a RedlockConfig can print one.
func (c RedlockConfig) String() string {
	addrs := make([]string, len(c.Nodes))
	for i, o := range c.Nodes {
		addrs[i] = o.Addr
	}
	return "redlock over " + strings.Join(addrs, ",") + " (prefix " + strconv.Quote(c.Prefix) + ")"
}

// redlockSpec: at least three masters, each naming its port, each used
// with its database 0; TLS as on the other multi-host URLs (tls.go).
var redlockSpec = urlx.Spec{
	Name: "redlock", Scheme: "redlock", TLSScheme: "redlocks", Form: redlockForm,
	Path: urlx.NoPath, PathNote: "each master's database 0 holds the locks (" + redlockForm + ")",
	Params: tlsParams,
}

// ParseRedlockURL parses redlock:// URLs: at least three masters.
func ParseRedlockURL(raw string) (RedlockConfig, error) {
	u, err := urlx.Parse(raw, redlockSpec)
	if err != nil {
		return RedlockConfig{}, err
	}
	if len(u.Hosts) < 3 {
		return RedlockConfig{}, lock.Invalidf("redlock URL names %d Redis masters: Redlock needs at least 3 independent ones (%s)", len(u.Hosts), redlockForm)
	}
	tlsCfg, err := takeTLS(&u, "redlock")
	if err != nil {
		return RedlockConfig{}, err
	}
	var cfg RedlockConfig
	for _, h := range u.Hosts {
		cfg.Nodes = append(cfg.Nodes, &goredis.Options{Addr: h, Username: u.User, Password: u.Password, TLSConfig: tlsCfg})
	}
	cfg.Password = u.Password
	return cfg, nil
}

// OpenRedlock connects to every node; at least one must answer within
// the connect timeout (so that a bad URL or password is 69 at once). A
// quorum is needed by each acquire, not here: a waiter may wait for the
// nodes to come back.
func OpenRedlock(ctx context.Context, cfg RedlockConfig) (*Redlock, error) {
	r := &Redlock{quorum: quorum(len(cfg.Nodes))}
	var addrs []string
	var timeout time.Duration
	for _, o := range cfg.Nodes {
		n, dial := open(Config{Options: o, Password: cfg.Password, Prefix: cfg.Prefix, ConnectTimeout: cfg.ConnectTimeout})
		n.redlock, timeout = true, dial
		r.nodes = append(r.nodes, n)
		addrs = append(addrs, o.Addr)
	}
	r.addrs = strings.Join(addrs, ",")
	errs := r.each(ctx, timeout, func(ctx context.Context, k int, n *Backend) error {
		if err := n.c.Ping(ctx).Err(); err != nil {
			return n.unavailable(err)
		}
		return nil
	})
	if answered(errs) == 0 {
		r.Close()
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("redlock: none of the %d redis masters answered: %s", len(r.nodes), firstLine(errs[0].Error())), Err: errs[0], Refused: isRefused(errs[0])}
	}
	return r, nil
}

// answered is how many of errs are nil.
func answered(errs []error) (n int) {
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
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

// each runs f on every node (k its index) at once, each call bounded by
// timeout, and returns their errors in node order.
func (r *Redlock) each(ctx context.Context, timeout time.Duration, f func(ctx context.Context, k int, n *Backend) error) []error {
	errs := make([]error, len(r.nodes))
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = f(cctx, i, n)
		}()
	}
	wg.Wait()
	return errs
}

// needQuorum returns nil when a quorum of errs are nil, else an
// unavailable error naming the first failure.
func (r *Redlock) needQuorum(errs []error, what string) error {
	ok := answered(errs)
	if ok >= r.quorum {
		return nil
	}
	var first error
	for _, err := range errs {
		if err != nil {
			first = err
			break
		}
	}
	return &lock.UnavailableError{
		Msg:     fmt.Sprintf("redlock: only %d of %d redis masters %s (a quorum is %d): %s", ok, len(r.nodes), what, r.quorum, firstLine(first.Error())),
		Err:     first,
		Refused: isRefused(first),
	}
}

// nodeTimeout bounds one node's part in an acquire or renewal: ttl/20.
func nodeTimeout(ttl time.Duration) time.Duration { return max(ttl/20, time.Millisecond) }

// Guarantee implements lock.Backend.
func (r *Redlock) Guarantee() string { return RedlockGuarantee(len(r.nodes)) }

// RedlockGuarantee is what Redlock over n masters promises, in one line
// (status's engine: line; internal/backend's registry).
func RedlockGuarantee(n int) string {
	return fmt.Sprintf("Redlock over %d Redis masters: a lock needs %d of them; exclusive while the nodes' clocks run at the same rate and no process pauses past the margin", n, quorum(n))
}

// quorum is how many of n masters a lock needs: a majority.
func quorum(n int) int { return n/2 + 1 }

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

// acquire is one Redlock attempt: the try-once on every node at once, each
// bounded by ttl/20, granted only with a quorum of grants that count (see
// young) and validity left: start + ttl·(1−ρ) − δ, counted from before the
// first request, which is also the lease's Granted, so the keeper counts
// the same way. The token is the maximum the quorum granted, written back
// to it (redlock_renew.lua) before the lease is returned: quorums intersect, so
// the next holder's includes a node whose counter is at least ours. A
// failed attempt is released on every node.
func (r *Redlock) acquire(ctx context.Context, req lock.Request) (lock.Lease, error) {
	if req.Limit > 1 {
		return nil, lock.Invalidf("--limit is not supported on redlock://: a semaphore's slots cannot be kept consistent across independent masters; use --limit on redis:// or etcd://")
	}
	start := time.Now()
	leases := make([]lock.Lease, len(r.nodes))
	infos := make([]restartInfo, len(r.nodes))
	errs := r.each(ctx, nodeTimeout(req.TTL), func(ctx context.Context, k int, n *Backend) error {
		l, info, err := n.redlockTryOnce(ctx, req)
		infos[k] = info
		if err == nil {
			leases[k] = l
		}
		return err
	})
	// A grant by a master that lost its data too recently does not count
	// (delayed restart); it is kept with the others or released with them.
	young := r.young(infos)
	granted := 0
	var tok uint64
	for k, l := range leases {
		if l == nil {
			continue
		}
		tok = max(tok, l.Token())
		if young[k] != nil {
			errs[k] = young[k]
		} else {
			granted++
		}
	}
	// ρ, δ: lock.ClockDrift, lock.ValidityDelta, as the keeper uses them.
	validity := time.Duration(float64(req.TTL)*(1-lock.ClockDrift)) - lock.ValidityDelta - time.Since(start)
	if granted >= r.quorum && validity > 0 {
		// The token: the maximum granted, written back to every master
		// that granted by a renewal (which writes the lease's token). A
		// master whose grant landed but whose reply was lost gets it from
		// the first renewal; until then Inspect reads the token a quorum's
		// records carry.
		st := &redlockStore{r: r, fields: recordFields(req.Meta, start)}
		l := lock.NewLease(lock.Grant{Key: req.Key, Owner: req.Owner, Token: tok, TTL: req.TTL, Granted: start}, st).(*lock.Held)
		werrs := r.each(ctx, nodeTimeout(req.TTL), func(ctx context.Context, k int, n *Backend) error {
			if leases[k] == nil {
				return errs[k]
			}
			if err := st.refreshOn(ctx, n, l, req.TTL, ""); err != nil {
				return err
			}
			return young[k]
		})
		if validity = time.Duration(float64(req.TTL)*(1-lock.ClockDrift)) - lock.ValidityDelta - time.Since(start); r.needQuorum(werrs, "took the fencing token") == nil && validity > 0 {
			return l, nil
		}
	}
	r.releaseEach(ctx, req.Key, req.Owner, false)
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

// redlockTryOnce is one master's part in an acquire: acquire.lua's
// try-once with the delayed restart's bookkeeping (redlockAcquireScript).
func (b *Backend) redlockTryOnce(ctx context.Context, req lock.Request) (lock.Lease, restartInfo, error) {
	granted := time.Now()
	keys, args := b.acquireCall(req, 0)
	res, err := redlockAcquireScript().Run(ctx, b.c, append(keys, b.bootKey(), b.ttlsKey()), args...).Slice()
	if err != nil {
		return nil, restartInfo{}, b.unavailable(err)
	}
	info, ok := parseRestartInfo(res)
	inner, _ := res[len(res)-1].([]any)
	if !ok || len(res) != 3 {
		return nil, restartInfo{}, fmt.Errorf("unexpected reply from the Redlock try-once script: %v", res)
	}
	s, err := b.stepReply(ctx, req, granted, inner, nil)
	if err != nil {
		return nil, info, err
	}
	l, err := s.result(req)
	return l, info, err
}

// The delayed restart's keys on each master (redlock_lib.lua).
func (b *Backend) bootKey() string { return b.prefix + ":redlock:boot" }
func (b *Backend) ttlsKey() string { return b.prefix + ":redlock:ttls" }

// restartInfo is what a Redlock script says of its master besides its
// answer: how long ago the master's boot marker was made (when it was
// first used after it lost its data) and the longest TTL of a lease live
// on it.
type restartInfo struct {
	answered     bool
	age, longest time.Duration
}

// parseRestartInfo reads a reply's first two elements, {age ms, longest
// ms}.
func parseRestartInfo(res []any) (restartInfo, bool) {
	if len(res) < 2 {
		return restartInfo{}, false
	}
	age, ok1 := res[0].(int64)
	longest, ok2 := res[1].(int64)
	return restartInfo{answered: true, age: time.Duration(age) * time.Millisecond, longest: time.Duration(longest) * time.Millisecond}, ok1 && ok2
}

// young says, per node, whether it lost its data too recently to count
// toward a quorum (the delayed restart). A master's leases lost when it
// lost its data were granted before it came back, so only the masters in
// use before then (boot markers older by more than sameBoot) know how
// long such a lease can still live: a master counts once its own marker
// is older than the longest TTL of a lease live on any of those, plus the
// drift allowance. A lease it may have lost has ended by then, or its
// holder has taken the key back on it. A brand-new deployment, whose
// masters' markers are all made by its first request, waits for nothing.
func (r *Redlock) young(infos []restartInfo) []error {
	out := make([]error, len(infos))
	for k, in := range infos {
		if !in.answered {
			continue
		}
		var need time.Duration
		for _, o := range infos {
			if o.answered && o.age > in.age+sameBoot {
				need = max(need, o.longest)
			}
		}
		need += time.Duration(float64(need) * lock.ClockDrift)
		if in.age < need {
			out[k] = &lock.UnavailableError{Msg: fmt.Sprintf("%s lost its data (restarted empty, or was flushed) %s ago: it counts toward a quorum once %s have passed (the longest TTL of a lease the other masters hold; Redlock's delayed restart)",
				r.nodes[k].addr, in.age.Round(time.Millisecond), need.Round(time.Millisecond))}
		}
	}
	return out
}

// sameBoot: masters whose boot markers were made within this of each
// other came into use together (a new deployment's first request makes
// them all) and cannot have lost each other's leases.
const sameBoot = time.Second

// recordFields are a holder record's fields besides owner, token and
// TTL, as a renewal writes them on a master that lost the key.
func recordFields(m lock.Meta, acquired time.Time) []any {
	return []any{"host", m.Host, "pid", m.PID, "user", m.User, "cmd", m.Command, "note", m.Note,
		"acquired_ms", acquired.UnixMilli()}
}

// releaseEach releases key on every node where owner holds it, on a fresh
// short context (ctx may have ended); wake says whether to publish the
// release. A failed attempt gives back grants on masters where the key
// was free before it, which frees nothing anyone waits for: it must not
// wake the waiters, among them the attempt's own process, which would try
// again at once, grant, give back and wake itself in a loop, holding the
// free masters nearly all the time (and keeping a holder's renewal from
// taking a key back on them).
func (r *Redlock) releaseEach(ctx context.Context, key, owner string, wake bool) (released int, errs []error) {
	errs = r.each(context.WithoutCancel(ctx), 2*time.Second, func(ctx context.Context, k int, n *Backend) error {
		channel := ""
		if wake {
			channel = n.channel(key)
		}
		return n.release(ctx, key, owner, 0, 1, channel)
	})
	return answered(errs), errs
}

// notify wakes a waiter when the key is released on any node that answers.
func (r *Redlock) notify(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	w := &waker{msgs: make(chan struct{}, 1)}
	errs := make([]error, len(r.nodes))
	for k, n := range r.nodes {
		errs[k] = w.subscribe(ctx, n, n.channel(key))
	}
	if len(w.subs) == 0 {
		return nil, nil, r.needQuorum(errs, "answered")
	}
	return w.msgs, w.close, nil
}

// Inspect implements lock.Backend: the key is held when one owner holds
// it on a quorum of nodes; it expires when the quorum-th longest of those
// leases does.
func (r *Redlock) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	holders := make([]*lock.Holder, len(r.nodes))
	errs := r.each(ctx, 5*time.Second, func(ctx context.Context, k int, n *Backend) error {
		h, held, err := n.Inspect(ctx, key)
		if held {
			holders[k] = &h
		}
		return err
	})
	if err := r.needQuorum(errs, "answered"); err != nil {
		return lock.Holder{}, false, err
	}
	h, ok := r.quorumHolder(holders)
	return h, ok, nil
}

// List implements lock.Backend: the keys a quorum holds.
func (r *Redlock) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	byKey := map[string][]*lock.Holder{}
	var mu sync.Mutex
	errs := r.each(ctx, 30*time.Second, func(ctx context.Context, k int, n *Backend) error {
		hs, err := n.List(ctx, keyPrefix)
		mu.Lock()
		defer mu.Unlock()
		for _, h := range hs {
			if byKey[h.Key] == nil {
				byKey[h.Key] = make([]*lock.Holder, len(r.nodes))
			}
			byKey[h.Key][k] = &h
		}
		return err
	})
	if err := r.needQuorum(errs, "answered"); err != nil {
		return nil, err
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
		h.Token = quorumToken(hs, r.quorum)
		return h, true
	}
	return lock.Holder{}, false
}

// quorumToken is the holder's token: the one a quorum of its records
// carry (the token written back after the grant, and by every renewal),
// so that status, list and break --token show DISTLOCK_TOKEN even while a
// master whose grant reply was lost still carries the token it granted
// itself; else the greatest.
func quorumToken(hs []lock.Holder, quorum int) uint64 {
	count := map[uint64]int{}
	var top uint64
	for _, h := range hs {
		count[h.Token]++
		top = max(top, h.Token)
	}
	for tok, n := range count {
		if n >= quorum {
			return tok
		}
	}
	return top
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
	errs := r.each(ctx, 5*time.Second, func(ctx context.Context, k int, n *Backend) error {
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
	errs := r.each(ctx, 5*time.Second, func(ctx context.Context, k int, n *Backend) error {
		_, err := n.Resume(ctx, h)
		return err
	})
	if err := r.quorumOf(errs, "hold this handle's lock"); err != nil {
		return nil, err
	}
	// The record's fields, for a master that loses the key meanwhile.
	var fields []any
	if qh, held, err := r.Inspect(ctx, h.Key); err == nil && held && qh.Owner == h.Owner {
		fields = recordFields(qh.Meta, qh.AcquiredAt)
	}
	return r.lease(h.Key, h.Owner, h.Token, h.TTL(), granted, fields), nil
}

// redlockStore is the lock.LeaseStore of a lock held on a quorum of the
// nodes.
type redlockStore struct {
	r *Redlock
	// fields are the record's other fields (recordFields), written when
	// a renewal takes the key back on a master that lost it.
	fields []any
}

// lease makes the lease of key held by owner with token on a quorum,
// granted at granted (the start of the attempt: Redlock's validity is
// counted from it).
func (r *Redlock) lease(key, owner string, token uint64, ttl time.Duration, granted time.Time, fields []any) lock.Lease {
	return lock.NewLease(lock.Grant{Key: key, Owner: owner, Token: token, TTL: ttl, Granted: granted}, &redlockStore{r: r, fields: fields})
}

// quorumOf turns the nodes' answers to an owner-checked change into the
// lease's: nil with a quorum; ErrNotHeld once too many nodes answered "not
// ours" for a quorum to be possible; else a (transient) error.
func (r *Redlock) quorumOf(errs []error, what string) error {
	notHeld := 0
	for _, err := range errs {
		if errors.Is(err, lock.ErrNotHeld) {
			notHeld++
		}
	}
	if len(errs)-notHeld < r.quorum {
		return lock.ErrNotHeld
	}
	return r.needQuorum(errs, what)
}

// Renew implements lock.LeaseStore: a quorum must extend it.
func (s *redlockStore) Renew(ctx context.Context, l *lock.Held) error {
	return s.refresh(ctx, l, nodeTimeout(l.TTL()), l.TTL(), "", "renewed "+l.Key())
}

// refresh extends the lease to ttl on every master (redlock_renew.lua),
// with mode for a hold: a master that lost its data since the grant
// (restarted empty, flushed) takes the key back while it is free there,
// every master's record gets the lease's token, and a quorum must have
// it. Unlike an acquire, a renewal counts a master that restarted too
// recently (young) once it holds our record: the delayed restart keeps a
// young master from helping anyone *establish* a lock it may have lost
// there; our lock was established by a quorum of masters that were not
// young, so no other holder of the key can be live, and a young master
// holding our record keeps it from everyone else like any other.
func (s *redlockStore) refresh(ctx context.Context, l *lock.Held, timeout, ttl time.Duration, mode, what string) error {
	errs := s.r.each(ctx, timeout, func(ctx context.Context, k int, n *Backend) error {
		return s.refreshOn(ctx, n, l, ttl, mode)
	})
	return s.r.quorumOf(errs, what)
}

// refreshOn is refresh on master n.
func (s *redlockStore) refreshOn(ctx context.Context, n *Backend, l *lock.Held, ttl time.Duration, mode string) error {
	args := append([]any{l.Owner(), max(ttl.Milliseconds(), 1), strconv.FormatUint(l.Token(), 10), mode,
		time.Since(l.Granted()).Milliseconds(), sameBoot.Milliseconds()}, s.fields...)
	res, err := redlockRenewScript().Run(ctx, n.c, []string{n.lockKey(l.Key()), n.tokenKey(l.Key()), n.bootKey(), n.ttlsKey()}, args...).Slice()
	if err != nil {
		return n.unavailable(err)
	}
	if _, ok := parseRestartInfo(res[min(1, len(res)):]); !ok || len(res) != 3 {
		return fmt.Errorf("unexpected reply from the Redlock renew script: %v", res)
	}
	if res[0] == int64(0) {
		return lock.ErrNotHeld
	}
	return nil
}

// Release implements lock.LeaseStore: on every node.
func (s *redlockStore) Release(ctx context.Context, l *lock.Held) error {
	released, errs := s.r.releaseEach(ctx, l.Key(), l.Owner(), true)
	if released > 0 {
		return nil
	}
	return s.r.quorumOf(errs, "released "+l.Key())
}

// Hold implements lock.LeaseStore: a quorum must keep it.
func (s *redlockStore) Hold(ctx context.Context, l *lock.Held, d time.Duration, mode string) (time.Duration, error) {
	return d, s.refresh(ctx, l, 5*time.Second, d, mode, "kept "+l.Key())
}
