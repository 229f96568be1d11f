package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	raft := lock.FirstCase("raft", []lock.Case{{When: after <= before, Status: lock.CheckProblem,
		Detail: fmt.Sprintf("the Raft applied index stayed at %d across a write", before), Fix: "the server does not apply writes: check its log and the cluster's quorum"},
	}, lock.Case{Detail: fmt.Sprintf("the Raft applied index moved from %d to %d across a write", before, after)})
	if err := errors.Join(berr, aerr); err != nil {
		raft = lock.CannotCheck("raft", "read the Raft applied index", err, "point distlock at a Consul server to have Raft checked")
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
	if err != nil {
		return lock.Check{Name: "cluster", Status: lock.CheckProblem, Detail: "could not ask for the leader: " + err.Error(), Fix: "check that the Consul servers run and answer"}
	}
	n := len(peers)
	return lock.FirstCase("cluster", []lock.Case{
		{When: leader == "", Status: lock.CheckProblem, Detail: "the servers know no leader: no lock can be taken or renewed", Fix: "restore a quorum of servers"},
		{When: n < 3, Status: lock.CheckWarning, Detail: fmt.Sprintf("leader %s, %d voting server(s): losing one loses the locks", leader, n),
			Fix: "run 3 or 5 servers for a lock that survives a server's failure"},
		{When: n%2 == 0, Status: lock.CheckWarning, Detail: fmt.Sprintf("leader %s, %d voting servers: an even count tolerates no more failures than one server fewer", leader, n),
			Fix: "run an odd number of servers (3 or 5)"},
	}, lock.Case{Detail: fmt.Sprintf("leader %s, %d voting servers", leader, n)})
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

// clockCheck compares the server's clock with ours, read from the Date
// header of its answers to a request that needs no ACL. Date has whole
// seconds, so it asks (every 20 ms) until the second turns: the turn is
// bracketed to about a round trip (lock.WaitTick).
func (b *Backend) clockCheck(ctx context.Context, ttl time.Duration) lock.Check {
	i := b.cur.Load()
	leader := b.scheme + "://" + b.addrs[i] + "/v1/status/leader"
	t, err := lock.WaitTick(ctx, 1500*time.Millisecond, 20*time.Millisecond, 1, func(ctx context.Context) (int64, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, leader, nil)
		if err != nil {
			return 0, err
		}
		resp, err := b.https[i].Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		date, err := http.ParseTime(resp.Header.Get("Date"))
		return date.Unix(), err
	})
	if err != nil {
		return lock.CannotCheck("clock", "read the server's clock (the second of its Date header turning)", err, "check that the Consul servers answer; then run doctor again")
	}
	return lock.ClockOffsetCheck(time.Unix(t.V+1, 0).Sub(t.Mid()), t.Half(), ttl, "the second of the server's Date header turning")
}
