package consul

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distlock/distlock/internal/lock"
)

var _ lock.Doctor = (*Backend)(nil)

// Doctor implements lock.Doctor: the leader and its peers, the Raft
// applied index moving across a write of ours (the TTL check's session),
// the session TTL bounds for --ttl, and the server's clock.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	rctx, cancel := context.WithTimeout(ctx, 4*req.Timeout+2*time.Second)
	defer cancel()
	checks := []lock.Check{b.leaderCheck(rctx)}
	before, berr := b.appliedIndex(rctx)
	checks = append(checks, b.ttlCheck(rctx, req.TTL))
	after, aerr := b.appliedIndex(rctx)
	checks = append(checks, raftVerdict(before, after, errors.Join(berr, aerr)))
	return append(checks, b.clockCheck(rctx, req.TTL))
}

// leaderCheck: a leader is known, and how many servers vote.
func (b *Backend) leaderCheck(ctx context.Context) lock.Check {
	var leader string
	var peers []string
	err := b.call(func(c *api.Client) error {
		var err error
		if leader, err = c.Status().LeaderWithQueryOptions(qo(ctx)); err != nil {
			return err
		}
		peers, err = c.Status().PeersWithQueryOptions(qo(ctx))
		return err
	})
	return leaderVerdict(leader, len(peers), err)
}

func leaderVerdict(leader string, peers int, err error) lock.Check {
	c := lock.Check{Name: "cluster"}
	switch {
	case err != nil:
		c.Status, c.Detail, c.Fix = lock.CheckProblem, "could not ask for the leader: "+err.Error(), "check that the Consul servers run and answer"
	case leader == "":
		c.Status, c.Detail, c.Fix = lock.CheckProblem, "the servers know no leader: no lock can be taken or renewed", "restore a quorum of servers"
	case peers < 3:
		c.Status, c.Detail = lock.CheckWarning, fmt.Sprintf("leader %s, %d voting server(s): losing one loses the locks", leader, peers)
		c.Fix = "run 3 or 5 servers for a lock that survives a server's failure"
	case peers%2 == 0:
		c.Status, c.Detail = lock.CheckWarning, fmt.Sprintf("leader %s, %d voting servers: an even count tolerates no more failures than one server fewer", leader, peers)
		c.Fix = "run an odd number of servers (3 or 5)"
	default:
		c.Status, c.Detail = lock.CheckOK, fmt.Sprintf("leader %s, %d voting servers", leader, peers)
	}
	return c
}

// appliedIndex is the Raft applied index of the server we talk to. The
// client's Agent().Self takes no context: it runs aside, and a ctx that
// ends first ends the wait for it.
func (b *Backend) appliedIndex(ctx context.Context) (uint64, error) {
	type answer struct {
		self map[string]map[string]any
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		a.err = b.call(func(c *api.Client) error {
			var err error
			a.self, err = c.Agent().Self()
			return err
		})
		got <- a
	}()
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if a.err != nil {
		return 0, a.err
	}
	raft, _ := a.self["Stats"]["raft"].(map[string]any)
	s, _ := raft["applied_index"].(string)
	if s == "" {
		return 0, errors.New("the agent is not a server (no Raft stats): ask a server to check Raft")
	}
	return strconv.ParseUint(s, 10, 64)
}

func raftVerdict(before, after uint64, err error) lock.Check {
	c := lock.Check{Name: "raft"}
	switch {
	case err != nil:
		c.Status, c.Detail, c.Fix = lock.CheckWarning, "could not read the Raft applied index: "+err.Error(), "point distlock at a Consul server to have Raft checked"
	case after <= before:
		c.Status, c.Detail = lock.CheckProblem, fmt.Sprintf("the Raft applied index stayed at %d across a write", before)
		c.Fix = "the server does not apply writes: check its log and the cluster's quorum"
	default:
		c.Status, c.Detail = lock.CheckOK, fmt.Sprintf("the Raft applied index moved from %d to %d across a write", before, after)
	}
	return c
}

// ttlCheck asks for a session of --ttl (and destroys it).
func (b *Backend) ttlCheck(ctx context.Context, ttl time.Duration) lock.Check {
	id, err := b.createSession(ctx, ttl)
	if err == nil {
		b.cleanup(ctx, id)
	}
	return ttlVerdict(ttl, err)
}

func ttlVerdict(ttl time.Duration, err error) lock.Check {
	c := lock.Check{Name: "session-ttl"}
	var bad *ttlError
	switch {
	case errors.As(err, &bad):
		c.Status, c.Detail = lock.CheckProblem, bad.Error()
		c.Fix = fmt.Sprintf("use a --ttl from %s to %s, or lower the servers' session_ttl_min", bad.min, bad.max)
	case err != nil:
		c.Status, c.Detail, c.Fix = lock.CheckProblem, "could not create a session: "+err.Error(), "check the ACL token's session:write permission"
	default:
		c.Status = lock.CheckOK
		c.Detail = fmt.Sprintf("Consul grants a session of --ttl %s; it expires one between %s and %s after its last renewal, so a holder that dies frees the key that late", ttl, ttl, 2*ttl)
	}
	return c
}
