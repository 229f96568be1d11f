package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor: the leader and its peers, the Raft
// applied index moving across a write of ours (the TTL check's session),
// the session TTL bounds for --ttl, and the server's clock.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	ctx, cancel := context.WithTimeout(ctx, 4*req.Timeout+2*time.Second)
	defer cancel()
	checks := []lock.Check{b.leaderCheck(ctx)}
	before, berr := b.appliedIndex(ctx)
	checks = append(checks, b.ttlCheck(ctx, req.TTL))
	after, aerr := b.appliedIndex(ctx)
	raft := lock.Check{Name: "raft", Status: lock.CheckOK, Detail: fmt.Sprintf("the Raft applied index moved from %d to %d across a write", before, after)}
	if err := errors.Join(berr, aerr); err != nil {
		raft = lock.Check{Name: "raft", Status: lock.CheckWarning, Detail: "could not read the Raft applied index: " + err.Error(),
			Fix: "point distlock at a Consul server to have Raft checked"}
	} else if after <= before {
		raft = lock.Check{Name: "raft", Status: lock.CheckProblem, Detail: fmt.Sprintf("the Raft applied index stayed at %d across a write", before),
			Fix: "the server does not apply writes: check its log and the cluster's quorum"}
	}
	return append(checks, raft, b.clockCheck(ctx, req.TTL))
}

// leaderCheck: a leader is known, and how many servers vote.
func (b *Backend) leaderCheck(ctx context.Context) lock.Check {
	var leader string
	var peers []string
	err := b.call(func(c *api.Client) (err error) {
		if leader, err = c.Status().LeaderWithQueryOptions(qo(ctx)); err == nil {
			peers, err = c.Status().PeersWithQueryOptions(qo(ctx))
		}
		return err
	})
	n, status, detail, fix := len(peers), lock.CheckWarning, "", ""
	switch {
	case err != nil:
		status, detail, fix = lock.CheckProblem, "could not ask for the leader: "+err.Error(), "check that the Consul servers run and answer"
	case leader == "":
		status, detail, fix = lock.CheckProblem, "the servers know no leader: no lock can be taken or renewed", "restore a quorum of servers"
	case n < 3:
		detail, fix = fmt.Sprintf("leader %s, %d voting server(s): losing one loses the locks", leader, n), "run 3 or 5 servers for a lock that survives a server's failure"
	case n%2 == 0:
		detail, fix = fmt.Sprintf("leader %s, %d voting servers: an even count tolerates no more failures than one server fewer", leader, n), "run an odd number of servers (3 or 5)"
	default:
		status, detail = lock.CheckOK, fmt.Sprintf("leader %s, %d voting servers", leader, n)
	}
	return lock.Check{Name: "cluster", Status: status, Detail: detail, Fix: fix}
}

// appliedIndex is the Raft applied index of the server we talk to.
func (b *Backend) appliedIndex(ctx context.Context) (uint64, error) {
	var self map[string]map[string]any
	if err := b.call(func(c *api.Client) error {
		_, err := c.Raw().Query("/v1/agent/self", &self, qo(ctx))
		return err
	}); err != nil {
		return 0, err
	}
	raft, _ := self["Stats"]["raft"].(map[string]any)
	s, _ := raft["applied_index"].(string)
	if s == "" {
		return 0, errors.New("the agent is not a server (no Raft stats): ask a server to check Raft")
	}
	return strconv.ParseUint(s, 10, 64)
}

// ttlCheck asks for a session of --ttl (and destroys it).
func (b *Backend) ttlCheck(ctx context.Context, ttl time.Duration) lock.Check {
	id, err := b.createSession(ctx, ttl)
	b.cleanup(ctx, id)
	var bad *ttlError
	switch {
	case errors.As(err, &bad):
		return lock.Check{Name: "session-ttl", Status: lock.CheckProblem, Detail: bad.Error(),
			Fix: fmt.Sprintf("use a --ttl from %s to %s, or lower the servers' session_ttl_min", bad.min, bad.max)}
	case err != nil:
		return lock.Check{Name: "session-ttl", Status: lock.CheckProblem, Detail: "could not create a session: " + err.Error(),
			Fix: "check the ACL token's session:write permission"}
	}
	return lock.Check{Name: "session-ttl", Status: lock.CheckOK,
		Detail: fmt.Sprintf("Consul grants a session of --ttl %s; it expires one between %s and %s after its last renewal, so a holder that dies frees the key that late", ttl, ttl, 2*ttl)}
}

// dateSeen is an http.RoundTripper that remembers the Date header of the
// last answer, with the local times just before the request was sent and
// just after its answer came: the clock check reads the server's clock
// from it, through the official client's own requests.
type dateSeen struct {
	next http.RoundTripper

	mu               sync.Mutex
	date, sent, recv time.Time
}

func (d *dateSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := d.next.RoundTrip(r)
	if err == nil {
		if t, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			d.mu.Lock()
			d.date, d.sent, d.recv = t, sent, time.Now()
			d.mu.Unlock()
		}
	}
	return resp, err
}

// clockCheck compares the server's clock with ours. Date has whole
// seconds, so it asks until the second turns (at most ~1.2 s, a request
// every 20 ms): the turn happened between the last request that showed
// the old second being sent and the first that showed the new one coming
// back, which bounds the offset to about a round trip.
func (b *Backend) clockCheck(ctx context.Context, ttl time.Duration) lock.Check {
	d := b.dates[b.cur.Load()]
	ask := func() (date, sent, recv time.Time, err error) {
		err = b.call(func(c *api.Client) error { _, err := c.Status().LeaderWithQueryOptions(qo(ctx)); return err })
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.date, d.sent, d.recv, err
	}
	first, prevSent, _, err := ask()
	deadline := time.Now().Add(1500 * time.Millisecond)
	for err == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		date, sent, recv, aerr := ask()
		if err = aerr; err == nil && date.After(first) {
			mid := prevSent.Add(recv.Sub(prevSent) / 2)
			return lock.ClockOffsetCheck(date.Sub(mid), recv.Sub(prevSent)/2, ttl, "the second of the server's Date header turning")
		}
		prevSent = sent
	}
	return lock.Check{Name: "clock", Status: lock.CheckWarning, Detail: "could not read the server's clock (its Date header did not turn)", Fix: "check that the Consul servers answer; then run doctor again"}
}
