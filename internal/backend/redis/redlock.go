package redis

// Redlock (redlock://host:port,host:port,host:port[,…]): one lock over N
// independent Redis masters, each the single-master Backend, held on a
// quorum (N/2+1) of them; what Redlock adds is listed in
// docs/ARCHITECTURE.md, "Redis".

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/backend/urlx"
	"github.com/distlock/distlock/internal/lock"
)

// Redlock's try-once is acquire.lua between the halves of
// redlock_acquire.lua (redlockAcquireScript, scripts.go).
var (
	//go:embed redlock_acquire.lua
	redlockAcquireSrc                         string
	redlockAcquireHead, redlockAcquireTail, _ = strings.Cut(redlockAcquireSrc, "-- acquire.lua\n")
)

const redlockForm = "redlock://[user:password@]host:port,host:port,host:port[,host:port...][?tls=true] (redlocks:// for TLS)"

// Redlock is a lock over independent Redis masters (see above).
type Redlock struct {
	nodes     []*Backend
	quorum    int
	addrs     string
	ledgerVer atomic.Uint64 // the run ledger's last write version (ledger.go)
}

// redlockSpec: at least three masters, each naming its port, each used
// with its database 0; TLS as on the other multi-host URLs (url.go).
var redlockSpec = urlx.Spec{
	Name: "redlock", Scheme: "redlock", TLSScheme: "redlocks", Form: redlockForm,
	Path: urlx.NoPath, PathNote: "each master's database 0 holds the locks (" + redlockForm + ")",
	Params: tlsParams,
}

// ParseRedlockURL parses redlock:// URLs: at least three masters
// (Config.Masters).
func ParseRedlockURL(raw string) (Config, error) {
	u, tlsCfg, err := parseTLS(raw, redlockSpec)
	if err != nil {
		return Config{}, err
	}
	if len(u.Hosts) < 3 {
		return Config{}, lock.Invalidf("redlock URL names %d Redis masters: Redlock needs at least 3 independent ones (%s)", len(u.Hosts), redlockForm)
	}
	cfg := Config{Password: u.Password, addr: "redlock over " + strings.Join(u.Hosts, ",")}
	for _, h := range u.Hosts {
		cfg.Masters = append(cfg.Masters, &goredis.Options{Addr: h, Username: u.User, Password: u.Password, TLSConfig: tlsCfg})
	}
	return cfg, nil
}

// OpenRedlock connects to every master; at least one must answer within
// the connect timeout (so that a bad URL or password is 69 at once). A
// quorum is needed by each acquire, not here: a waiter may wait for the
// masters to come back.
func OpenRedlock(ctx context.Context, cfg Config) (*Redlock, error) {
	r := &Redlock{quorum: quorum(len(cfg.Masters))}
	var addrs []string
	var timeout time.Duration
	for _, o := range cfg.Masters {
		n, dial := open(Config{Options: o, Password: cfg.Password, Prefix: cfg.Prefix, ConnectTimeout: cfg.ConnectTimeout})
		n.redlock, timeout = true, dial
		r.nodes, addrs = append(r.nodes, n), append(addrs, o.Addr)
	}
	r.addrs = strings.Join(addrs, ",")
	errs := r.each(ctx, timeout, func(ctx context.Context, _ int, n *Backend) error {
		if err := n.c.Ping(ctx).Err(); err != nil {
			return n.unavailable(err)
		}
		return nil
	})
	if !slices.Contains(errs, nil) {
		r.Close()
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("redlock: none of the %d redis masters answered: %s", len(r.nodes), lock.FirstLine(errs[0])), Err: errs[0], Refused: isRefused(errs[0])}
	}
	return r, nil
}

// Doctor implements lock.Doctor: every master's checks, each detail
// naming its master.
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

// Guarantee implements lock.Backend: what Redlock over its masters
// promises, in one line (status's engine: line).
func (r *Redlock) Guarantee() string {
	return fmt.Sprintf("Redlock over %d Redis masters: a lock needs %d of them; exclusive while the nodes' clocks run at the same rate and no process pauses past the margin", len(r.nodes), r.quorum)
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

// fan runs f on every master (k its index) at once, each call bounded by
// timeout, and returns the answers and errors in master order.
func fan[T any](ctx context.Context, r *Redlock, timeout time.Duration, f func(ctx context.Context, k int, n *Backend) (T, error)) ([]T, []error) {
	vals, errs := make([]T, len(r.nodes)), make([]error, len(r.nodes))
	var wg sync.WaitGroup
	for k, n := range r.nodes {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			vals[k], errs[k] = f(cctx, k, n)
		})
	}
	wg.Wait()
	return vals, errs
}

func (r *Redlock) each(ctx context.Context, timeout time.Duration, f func(ctx context.Context, k int, n *Backend) error) []error {
	_, errs := fan(ctx, r, timeout, func(ctx context.Context, k int, n *Backend) (struct{}, error) { return struct{}{}, f(ctx, k, n) })
	return errs
}

func isRefused(err error) bool {
	var ue *lock.UnavailableError
	return errors.As(err, &ue) && ue.Refused
}

// quorumOf turns the masters' answers errs into one: nil with a quorum
// of nils; ErrNotHeld once too many masters answered "not ours" for a
// quorum to be possible; else an unavailable error naming the first
// failure.
func (r *Redlock) quorumOf(errs []error, what string) error {
	ok, notHeld := 0, 0
	var first error
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, lock.ErrNotHeld):
			notHeld++
		}
		if first == nil {
			first = err
		}
	}
	switch {
	case ok >= r.quorum:
		return nil
	case len(errs)-notHeld < r.quorum:
		return lock.ErrNotHeld
	}
	return &lock.UnavailableError{
		Msg: fmt.Sprintf("redlock: only %d of %d redis masters %s (a quorum is %d): %s", ok, len(r.nodes), what, r.quorum, lock.FirstLine(first)),
		Err: first, Refused: isRefused(first),
	}
}

// onQuorum is quorumOf over each's errors.
func (r *Redlock) onQuorum(ctx context.Context, timeout time.Duration, what string, f func(ctx context.Context, k int, n *Backend) error) error {
	return r.quorumOf(r.each(ctx, timeout, f), what)
}

// nodeTimeout bounds one master's part in an acquire or renewal: ttl/20.
func nodeTimeout(ttl time.Duration) time.Duration { return max(ttl/20, time.Millisecond) }

// validity is what is left of a lease of ttl granted at start by
// Redlock's rule, start + ttl·(1−ρ) − δ (lock.ClockDrift,
// lock.ValidityDelta, as the keeper counts them).
func validity(ttl time.Duration, start time.Time) time.Duration {
	return time.Duration(float64(ttl)*(1-lock.ClockDrift)) - lock.ValidityDelta - time.Since(start)
}

// Contend implements lock.Backend.
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

// acquire is one Redlock attempt: the try-once on every master at once,
// each bounded by ttl/20, granted with a quorum of grants that count (see
// young) and validity left, counted from before the first request, which
// is also the lease's Granted, so the keeper counts the same way. The
// token is the greatest any master granted, written back to every master
// that granted before the lease is returned (redlock_renew.lua): quorums
// intersect, so the next holder's includes a master whose counter is at
// least ours, even after another lost its data. A failed attempt is given
// back on every master.
func (r *Redlock) acquire(ctx context.Context, req lock.Request) (lock.Lease, error) {
	if req.Limit > 1 {
		return nil, lock.Invalidf("--limit is not supported on redlock://: a semaphore's slots cannot be kept consistent across independent masters; use --limit on redis:// or etcd://")
	}
	start := time.Now()
	tries, errs := fan(ctx, r, nodeTimeout(req.TTL), func(ctx context.Context, _ int, n *Backend) (nodeTry, error) {
		return n.redlockTryOnce(ctx, req)
	})
	// A grant by a master that lost its data too recently does not count
	// (the delayed restart); it is written back or given back with the
	// others.
	granted := 0
	var tok uint64
	for k, t := range tries {
		if t.lease == nil {
			continue
		}
		tok = max(tok, t.lease.Token())
		if errs[k] = r.young(tries, k); errs[k] == nil {
			granted++
		}
	}
	if granted >= r.quorum && validity(req.TTL, start) > 0 {
		// A master whose grant landed but whose reply was lost gets the
		// token from the first renewal; until then Inspect reads the
		// token a quorum's records carry.
		st := newRedlockStore(r, recordFields(req.Meta, start))
		l := lock.NewLease(lock.Grant{Key: req.Key, Owner: req.Owner, Token: tok, TTL: req.TTL, Granted: start}, st).(*lock.Held)
		err := r.onQuorum(ctx, nodeTimeout(req.TTL), "took the fencing token", func(ctx context.Context, k int, n *Backend) error {
			if tries[k].lease == nil {
				return errs[k]
			}
			return errors.Join(st.writeBack(ctx, k, n, l), errs[k])
		})
		if err == nil && validity(req.TTL, start) > 0 {
			return l, nil
		}
	}
	r.releaseEach(ctx, req.Key, req.Owner, false)
	// No quorum: busy if any master has another holder, else unavailable.
	for _, err := range errs {
		if errors.Is(err, lock.ErrHeld) || errors.Is(err, lock.ErrInvalid) {
			return nil, err
		}
	}
	if granted >= r.quorum {
		return nil, &lock.UnavailableError{Msg: fmt.Sprintf("redlock: %s was granted by %d of %d redis masters but too late (the TTL's validity was used up): raise --ttl or check the latency to %s", req.Key, granted, len(r.nodes), r.addrs)}
	}
	return nil, r.quorumOf(errs, "granted "+req.Key)
}

// nodeTry is one master's answer to a Redlock try-once: its grant, if
// any, and, when it answered, its delayed restart's state: how long ago
// its boot marker was made (when it was first used after it lost its
// data) and the longest TTL of a lease live on it.
type nodeTry struct {
	lease        lock.Lease
	answered     bool
	age, longest time.Duration
}

// redlockTryOnce is one master's part in an acquire: acquire.lua's
// try-once with the delayed restart's bookkeeping (redlock_acquire.lua).
func (b *Backend) redlockTryOnce(ctx context.Context, req lock.Request) (nodeTry, error) {
	granted := time.Now()
	keys, args := b.acquireCall(req, 0)
	res, err := redlockAcquireScript().Run(ctx, b.c, append(keys, b.bootKey(), b.ttlsKey()), args...).Slice()
	if err != nil {
		return nodeTry{}, b.unavailable(err)
	}
	// The delayed restart counts on age and longest: a reply without them
	// must not pass for a master that has been up all along.
	if len(res) == 3 {
		age, ok1 := res[0].(int64)
		longest, ok2 := res[1].(int64)
		if ok1 && ok2 {
			t := nodeTry{answered: true, age: time.Duration(age) * time.Millisecond, longest: time.Duration(longest) * time.Millisecond}
			inner, _ := res[2].([]any)
			t.lease, _, err = b.stepReply(ctx, req, granted, inner, nil)
			return t, err
		}
	}
	return nodeTry{}, fmt.Errorf("unexpected reply from the Redlock try-once script: %v", res)
}

// The delayed restart's keys (redlock_lib.lua).
func (b *Backend) bootKey() string { return b.prefix + ":redlock:boot" }
func (b *Backend) ttlsKey() string { return b.prefix + ":redlock:ttls" }

// sameBoot: masters whose boot markers were made within this of each
// other came into use together (a new deployment's first request makes
// them all) and cannot have lost each other's leases.
const sameBoot = time.Second

// young says why master k lost its data too recently to count toward a
// quorum (the delayed restart), or nil. Leases it lost were
// granted before it came back, so only the masters in use before then
// (markers older by more than sameBoot) know how long such a lease can
// still live: a master counts once its own marker is older than the
// longest TTL live on any of those, plus the drift allowance. A
// brand-new deployment, whose markers its first request makes, waits for
// nothing.
func (r *Redlock) young(tries []nodeTry, k int) error {
	in := tries[k]
	var need time.Duration
	for _, o := range tries {
		if o.answered && o.age > in.age+sameBoot {
			need = max(need, o.longest)
		}
	}
	need += time.Duration(float64(need) * lock.ClockDrift)
	if !in.answered || in.age >= need {
		return nil
	}
	return &lock.UnavailableError{Msg: fmt.Sprintf("%s lost its data (restarted empty, or was flushed) %s ago: it counts toward a quorum once %s have passed (the longest TTL of a lease the other masters hold; Redlock's delayed restart)",
		r.nodes[k].addr, in.age.Round(time.Millisecond), need.Round(time.Millisecond))}
}

// recordFields are a holder record's fields besides owner, token and
// TTL, as a renewal writes them on a master that lost the key.
func recordFields(m lock.Meta, acquired time.Time) []any {
	return []any{"host", m.Host, "pid", m.PID, "user", m.User, "cmd", m.Command, "note", m.Note,
		"acquired_ms", acquired.UnixMilli()}
}

// releaseEach releases key on every master where owner holds it, on a
// fresh short context (ctx may have ended); wake says whether to publish
// the release. A failed attempt gives back grants on masters where the
// key was free before it, which frees nothing anyone waits for: it must
// not wake the waiters, among them the attempt's own process, which would
// try again at once, grant, give back and wake itself in a loop, holding
// the free masters nearly all the time (and keeping a holder's renewal
// from taking a key back on them).
func (r *Redlock) releaseEach(ctx context.Context, key, owner string, wake bool) []error {
	return r.each(context.WithoutCancel(ctx), 2*time.Second, func(ctx context.Context, _ int, n *Backend) error {
		channel := ""
		if wake {
			channel = n.channel(key)
		}
		return n.release(ctx, key, owner, 0, 1, channel)
	})
}

// notify wakes a waiter when the key is released on any master that
// answers.
func (r *Redlock) notify(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	w := &waker{msgs: make(chan struct{}, 1)}
	errs := make([]error, len(r.nodes))
	for k, n := range r.nodes {
		errs[k] = w.subscribe(ctx, n, n.channel(key))
	}
	if len(w.subs) == 0 {
		return nil, nil, r.quorumOf(errs, "answered")
	}
	return w.msgs, w.close, nil
}

// Inspect implements lock.Backend: the oldest of slots.
func (r *Redlock) Inspect(ctx context.Context, key string) (lock.Holder, bool, error) {
	return lock.InspectOldest(ctx, key, r.slots)
}

// slots is key's holders (holders): leftovers of failed attempts, on
// fewer masters than a quorum, are not; they expire by themselves.
func (r *Redlock) slots(ctx context.Context, key string) ([]lock.Holder, error) {
	return r.holders(ctx, 5*time.Second, func(ctx context.Context, n *Backend) ([]lock.Holder, error) { return n.InspectSlots(ctx, key) })
}

// List implements lock.Backend: the keys a quorum holds (holders).
func (r *Redlock) List(ctx context.Context, keyPrefix string) ([]lock.Holder, error) {
	return r.holders(ctx, 30*time.Second, func(ctx context.Context, n *Backend) ([]lock.Holder, error) {
		return n.List(ctx, keyPrefix)
	})
}

// holders merges the holders the masters read (a quorum must answer): a
// key is held when one owner holds it on a quorum, until the quorum-th
// longest of those leases ends, with the token a quorum of its records
// carry (quorumToken).
func (r *Redlock) holders(ctx context.Context, timeout time.Duration, read func(context.Context, *Backend) ([]lock.Holder, error)) ([]lock.Holder, error) {
	all, errs := fan(ctx, r, timeout, func(ctx context.Context, _ int, n *Backend) ([]lock.Holder, error) { return read(ctx, n) })
	if err := r.quorumOf(errs, "answered"); err != nil {
		return nil, err
	}
	byOwner := map[[2]string][]lock.Holder{}
	for _, h := range slices.Concat(all...) {
		byOwner[[2]string{h.Key, h.Owner}] = append(byOwner[[2]string{h.Key, h.Owner}], h)
	}
	var out []lock.Holder
	for _, hs := range byOwner {
		if len(hs) >= r.quorum {
			sort.Slice(hs, func(a, b int) bool { return hs[a].ExpiresIn > hs[b].ExpiresIn })
			h := hs[r.quorum-1]
			h.Token = quorumToken(hs, r.quorum)
			out = append(out, h)
		}
	}
	lock.SortHolders(out)
	return out, nil
}

// quorumToken is the holder's token: the one a quorum of its records
// carry (written back after the grant, and by every renewal), so that
// status, list and break --token show DISTLOCK_TOKEN even while a master
// whose grant reply was lost still carries the token it granted itself;
// else the greatest.
func quorumToken(hs []lock.Holder, quorum int) uint64 {
	count := map[uint64]int{}
	var top uint64
	for _, h := range hs {
		if count[h.Token]++; count[h.Token] >= quorum {
			return h.Token
		}
		top = max(top, h.Token)
	}
	return top
}

// Break implements lock.Backend by breakHolders over slots, each released
// by breakOwner.
func (r *Redlock) Break(ctx context.Context, key string, token uint64) (lock.Holder, error) {
	held, err := r.slots(ctx, key)
	return breakHolders(key, held, err, token, func(h lock.Holder) error { return r.breakOwner(ctx, key, h.Owner) })
}

// breakOwner releases key on every master that names owner (release.lua
// checks the owner id, one per acquisition): a quorum must answer, a
// master where it is gone already counting as answered; ErrNotHeld when
// it was gone everywhere (it let go since it was read).
func (r *Redlock) breakOwner(ctx context.Context, key, owner string) error {
	released, errs := fan(ctx, r, 5*time.Second, func(ctx context.Context, _ int, n *Backend) (bool, error) {
		err := n.release(ctx, key, owner, 0, 1, n.channel(key))
		if errors.Is(err, lock.ErrNotHeld) {
			return false, nil
		}
		return err == nil, err
	})
	err := r.quorumOf(errs, "broke the lock")
	if err == nil && !slices.Contains(released, true) {
		return lock.ErrNotHeld
	}
	return err
}

// Resume implements lock.Backend: a quorum of masters must name h's owner
// and token (holding). Their record gives the fields a renewal writes on
// a master that lost the key; the masters that name h's owner (one per
// acquisition) are the ones the lease knows to hold its record
// (redlockStore.known).
func (r *Redlock) Resume(ctx context.Context, h lock.Handle) (lock.Lease, error) {
	granted := time.Now()
	recs, errs := fan(ctx, r, 5*time.Second, func(ctx context.Context, _ int, n *Backend) (lock.Holder, error) { return n.holding(ctx, h) })
	if err := r.quorumOf(errs, "hold this handle's lock"); err != nil {
		return nil, err
	}
	k := slices.Index(errs, nil)
	st := newRedlockStore(r, recordFields(recs[k].Meta, recs[k].AcquiredAt))
	for i, rec := range recs {
		st.known[i] = rec.Owner == h.Owner && (errs[i] == nil || errors.Is(errs[i], lock.ErrNotHeld))
	}
	return lock.NewLease(lock.Grant{Key: h.Key, Owner: h.Owner, Token: h.Token, TTL: h.TTL(), Granted: granted}, st), nil
}
