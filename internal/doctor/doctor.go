// Package doctor is `distlock doctor`'s engine-neutral part: the checks
// every engine gets (round-trip latency against the TTL, a lock taken and
// released twice with rising tokens), followed by the engine's own checks
// when it has them (lock.Doctor). It knows engines only as lock.Backends.
package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Options are what doctor checks against.
type Options struct {
	Key     string        // the scratch key, without the prefix
	TTL     time.Duration // the --ttl the user means to run with
	Meta    lock.Meta     // who is asking, recorded with the scratch lock
	Timeout time.Duration // bounds one request to the engine (--connect-timeout)
	Samples int           // round trips for the latency median (0: 5)
}

// Latency factors: --ttl must be at least goodFactor times the median
// round trip (a renewal attempt gets ttl/5 and retries start at ttl/50, so
// the tail of the latency needs room), and below badFactor a renewal has
// room for only two round trips.
const (
	goodFactor = 50
	badFactor  = 10
)

// Run makes every check: the engine-neutral ones, then the engine's own.
func Run(ctx context.Context, b lock.Backend, o Options) []lock.Check {
	if o.Samples <= 0 {
		o.Samples = 5
	}
	checks := []lock.Check{
		Latency(ctx, b, o),
		LockCycle(ctx, b, o),
	}
	d, ok := b.(lock.Doctor)
	if !ok {
		return append(checks, lock.Check{
			Name: "engine", Status: lock.CheckWarning,
			Detail: "this engine has no checks of its own: its settings and its clock were not checked",
			Fix:    "check the engine's settings by hand against the README's \"Doctor\" section",
		})
	}
	return append(checks, d.Doctor(ctx, lock.DoctorRequest{Key: o.Key, TTL: o.TTL, Timeout: o.Timeout})...)
}

// Latency times o.Samples look-ups of the scratch key (Backend.Inspect,
// one request each) and judges their median against the TTL.
func Latency(ctx context.Context, b lock.Backend, o Options) lock.Check {
	samples := make([]time.Duration, 0, o.Samples)
	for range o.Samples {
		rctx, cancel := context.WithTimeout(ctx, o.Timeout)
		start := time.Now()
		_, _, err := b.Inspect(rctx, o.Key)
		took := time.Since(start)
		cancel()
		if err != nil {
			return lock.Check{
				Name: "latency", Status: lock.CheckProblem,
				Detail: fmt.Sprintf("a look-up of %s failed after %s: %s", o.Key, took.Round(time.Microsecond), lock.FirstLine(err)),
				Fix:    "the engine answered once but not reliably: check the network between here and the engine, and the engine's load",
			}
		}
		samples = append(samples, took)
	}
	return LatencyCheck(samples, o.TTL)
}

// LatencyCheck judges round trips against the TTL: ttl/median must be at
// least goodFactor.
func LatencyCheck(samples []time.Duration, ttl time.Duration) lock.Check {
	s := slices.Clone(samples)
	slices.Sort(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	factor := float64(ttl) / float64(max(median, time.Nanosecond))
	detail := fmt.Sprintf("median round trip %s over %d requests (slowest %s); --ttl %s is %s× that (distlock wants at least %d×: a renewal attempt gets ttl/5, retries start at ttl/50)",
		lock.RoundSmall(median), len(s), lock.RoundSmall(s[len(s)-1]), ttl, formatFactor(factor), goodFactor)
	switch {
	case factor < badFactor:
		return lock.Check{Name: "latency", Status: lock.CheckProblem, Detail: detail,
			Fix: fmt.Sprintf("raise --ttl to at least %s, or run closer to the engine: renewals this slow lose the lease", roundUp(median*goodFactor))}
	case factor < goodFactor:
		return lock.Check{Name: "latency", Status: lock.CheckWarning, Detail: detail,
			Fix: fmt.Sprintf("raise --ttl to at least %s: a slow round trip in the tail can cost the lease", roundUp(median*goodFactor))}
	}
	return lock.Check{Name: "latency", Status: lock.CheckOK, Detail: detail}
}

// LockCycle takes the scratch key and releases it, twice, checking that
// the engine shows it held in between and free after, and that the second
// fencing token is greater than the first.
func LockCycle(ctx context.Context, b lock.Backend, o Options) lock.Check {
	const name = "lock"
	problem := func(detail, fix string) lock.Check {
		return lock.Check{Name: name, Status: lock.CheckProblem, Detail: detail, Fix: fix}
	}
	var tokens []uint64
	for range 2 {
		owner, err := newOwner()
		if err != nil {
			return problem(err.Error(), "")
		}
		req := lock.Request{Key: o.Key, TTL: o.TTL, Owner: owner, Meta: o.Meta}
		rctx, cancel := context.WithTimeout(ctx, o.Timeout)
		l, err := lock.TryOnce(rctx, b, req)
		cancel()
		var busy *lock.BusyError
		switch {
		case errors.As(err, &busy):
			return lock.Check{Name: name, Status: lock.CheckWarning,
				Detail: fmt.Sprintf("%s is %s, so it was not taken", o.Key, lock.DescribeHolder(busy.Holder, time.Now())),
				Fix:    "run doctor again when it is free, or give another scratch key with --key"}
		case err != nil:
			return problem(fmt.Sprintf("could not take %s: %s", o.Key, lock.FirstLine(err)),
				"distlock run will fail the same way: check the engine's permissions for the prefix (--prefix) and its health")
		}
		tokens = append(tokens, l.Token())
		if c, bad := heldAs(ctx, b, o, l); bad {
			release(l, o.Timeout)
			return c
		}
		rctx, cancel = context.WithTimeout(context.Background(), o.Timeout)
		err = l.Release(rctx)
		cancel()
		if err != nil {
			return problem(fmt.Sprintf("took %s (token %d) but could not release it: %s", o.Key, l.Token(), lock.FirstLine(err)),
				fmt.Sprintf("it expires by itself after --ttl %s; distlock run would leave its locks the same way: check the engine's permissions and health", o.TTL))
		}
		if c, bad := freed(ctx, b, o); bad {
			return c
		}
	}
	if tokens[1] <= tokens[0] {
		return problem(fmt.Sprintf("fencing tokens of %s did not rise: %d, then %d", o.Key, tokens[0], tokens[1]),
			"a store that checks DISTLOCK_TOKEN would reject the new holder: the engine's token counter went backwards (restored from an old backup?); report it")
	}
	return lock.Check{Name: name, Status: lock.CheckOK,
		Detail: fmt.Sprintf("took and released %s twice; the engine showed it held, then free; fencing tokens rose (%d, then %d)", o.Key, tokens[0], tokens[1])}
}

// heldAs checks that the engine shows l's key held by l.
func heldAs(ctx context.Context, b lock.Backend, o Options, l lock.Lease) (lock.Check, bool) {
	return shows(ctx, b, o, look{
		did:     fmt.Sprintf("took %s", o.Key),
		readFix: "status and list will fail the same way: check the engine's read permissions for the prefix",
		right:   func(h lock.Holder, held bool) bool { return held && h.Token == l.Token() },
		wrong:   fmt.Sprintf("took %s (token %d), but the engine shows it ", o.Key, l.Token()),
		fix:     "another process is using the same key and prefix against another engine, or the engine lost the write: check for a proxy or replica between here and the engine",
	})
}

// freed checks that the engine shows the key free after a release.
func freed(ctx context.Context, b lock.Backend, o Options) (lock.Check, bool) {
	return shows(ctx, b, o, look{
		did:     fmt.Sprintf("released %s", o.Key),
		readFix: "check the engine's read permissions for the prefix and its health",
		right:   func(_ lock.Holder, held bool) bool { return !held },
		wrong:   fmt.Sprintf("released %s, but the engine still shows it ", o.Key),
		fix:     "a release that does not free the lock makes every next run wait for the TTL: check for a proxy or replica between here and the engine",
	})
}

// look is what LockCycle expects the engine to show after a step: right
// says whether it does; did, wrong and the fixes word the problem.
type look struct {
	did, readFix, wrong, fix string
	right                    func(h lock.Holder, held bool) bool
}

// shows reads the scratch key and returns the problem when it is not as
// expected (true), or no check (false).
func shows(ctx context.Context, b lock.Backend, o Options, e look) (lock.Check, bool) {
	h, held, err := inspect(ctx, b, o)
	switch {
	case err != nil:
		return lock.Check{Name: "lock", Status: lock.CheckProblem,
			Detail: fmt.Sprintf("%s but could not look it up: %s", e.did, lock.FirstLine(err)), Fix: e.readFix}, true
	case !e.right(h, held):
		return lock.Check{Name: "lock", Status: lock.CheckProblem, Detail: e.wrong + describe(h, held), Fix: e.fix}, true
	}
	return lock.Check{}, false
}

// inspect reads the scratch key's holder within one request timeout.
func inspect(ctx context.Context, b lock.Backend, o Options) (lock.Holder, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	return b.Inspect(rctx, o.Key)
}

func describe(h lock.Holder, held bool) string {
	if !held {
		return "free"
	}
	return lock.DescribeHolder(h, time.Now())
}

func release(l lock.Lease, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l.Release(ctx)
}

func newOwner() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make an owner id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// roundUp rounds a suggested TTL up to a whole second (at least 1s).
func roundUp(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}

func formatFactor(f float64) string {
	if f >= 100 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.1f", f)
}
