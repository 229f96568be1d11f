package etcd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// Doctor implements lock.Doctor: the cluster's health and size, the
// shortest lease the server grants against --ttl, authentication, TLS, and
// how fast the leader's lease clock runs against ours.
func (b *Backend) Doctor(ctx context.Context, req lock.DoctorRequest) []lock.Check {
	rctx := req.RequestContexts(ctx, b.dialTO)
	return []lock.Check{
		b.clusterCheck(rctx),
		b.leaseTTLCheck(rctx, req.TTL),
		b.authCheck(rctx),
		tlsVerdict(b.cli.Endpoints()),
		b.clockCheck(ctx, rctx),
	}
}

type reqCtx = lock.RequestContext

// clusterView is what clusterCheck learned from the cluster.
type clusterView struct {
	voters, learners int
	endpoints        int      // endpoints in --backend
	version          string   // of the first endpoint that answered
	leader           bool     // an endpoint knows a leader
	errors           []string // endpoint errors and alarms
}

func (b *Backend) clusterCheck(rctx reqCtx) lock.Check {
	ctx, cancel := rctx()
	defer cancel()
	ml, err := b.cli.MemberList(ctx)
	if err != nil {
		return lock.CannotCheck("cluster", "list the members", err, "give distlock's user permission to list members, or check the cluster with etcdctl endpoint health --cluster")
	}
	v := clusterView{endpoints: len(b.cli.Endpoints())}
	for _, m := range ml.Members {
		if m.IsLearner {
			v.learners++
		} else {
			v.voters++
		}
	}
	for _, ep := range b.cli.Endpoints() {
		st, err := b.cli.Status(ctx, ep)
		if err != nil {
			v.errors = append(v.errors, fmt.Sprintf("%s did not answer: %s", redactEndpoint(ep), lock.FirstLine(err)))
			continue
		}
		v.version = cmp.Or(v.version, st.Version)
		v.leader = v.leader || st.Leader != 0
		for _, e := range st.Errors {
			v.errors = append(v.errors, redactEndpoint(ep)+": "+e)
		}
	}
	if al, err := b.cli.AlarmList(ctx); err == nil {
		for _, a := range al.Alarms {
			v.errors = append(v.errors, fmt.Sprintf("alarm %s on member %x", a.Alarm, a.MemberID))
		}
	}
	return clusterVerdict(v)
}

// clusterVerdict judges the cluster's health and size.
func clusterVerdict(v clusterView) lock.Check {
	detail := fmt.Sprintf("%d voting member(s)", v.voters)
	if v.learners > 0 {
		detail += fmt.Sprintf(" and %d learner(s)", v.learners)
	}
	if v.version != "" {
		detail += ", etcd " + v.version
	}
	const threeMembers = "run 3 (or 5) members: 3 survive the loss of one"
	tolerates := (v.voters - 1) / 2
	return lock.FirstCase("cluster", []lock.Case{
		{When: len(v.errors) > 0, Status: lock.CheckProblem, Detail: detail + ": " + strings.Join(v.errors, "; "),
			Fix: "fix the cluster before trusting locks on it (etcdctl endpoint status --cluster, etcdctl alarm list): a NOSPACE alarm refuses every new lock"},
		{When: !v.leader, Status: lock.CheckProblem, Detail: detail + ": no endpoint knows a leader",
			Fix: "the cluster has no quorum: bring enough members back (etcdctl endpoint status --cluster)"},
		{When: v.voters == 1, Status: lock.CheckWarning, Detail: detail + ": no fault tolerance, if it stops every distlock run waits or exits 69", Fix: threeMembers},
		{When: v.voters == 2, Status: lock.CheckWarning, Detail: detail + ": a quorum of 2 needs both, so either stopping stops the cluster", Fix: threeMembers},
		{When: v.endpoints < v.voters && v.endpoints == 1, Status: lock.CheckWarning,
			Detail: detail + fmt.Sprintf(", tolerating %d failure(s); but --backend names one endpoint: if it stops, distlock cannot reach the others", tolerates),
			Fix:    "list every member in the URL (etcd://h1:2379,h2:2379,h3:2379), unless that endpoint is a load balancer"},
	}, lock.Case{Detail: detail + fmt.Sprintf(", healthy, with a leader; tolerates %d failure(s)", tolerates)})
}

// leaseTTLCheck asks for a 1-second lease: the server raises it to its
// minimum (1.5 election timeouts, in whole seconds) and says so.
func (b *Backend) leaseTTLCheck(rctx reqCtx, ttl time.Duration) lock.Check {
	ctx, cancel := rctx()
	defer cancel()
	g, err := b.cli.Grant(ctx, 1)
	if err != nil {
		return lock.CannotCheck("lease-ttl", "grant a lease", err, "give distlock's user permission to grant leases: every lock is one")
	}
	b.cli.Revoke(ctx, g.ID)
	return leaseTTLVerdict(time.Duration(g.TTL)*time.Second, ttl)
}

// leaseTTLVerdict judges the server's shortest lease against --ttl, which
// is asked as a lease of whole seconds, rounded up.
func leaseTTLVerdict(minTTL, ttl time.Duration) lock.Check {
	asked := time.Duration(leaseSeconds(ttl)) * time.Second
	return lock.GrantedTTLCheck("lease-ttl", "lease", ttl, max(minTTL, asked), asked-ttl,
		fmt.Sprintf("etcd counts whole seconds, rounded up; its shortest lease is %s, 1.5 election timeouts", minTTL), "",
		fmt.Sprintf("use --ttl %s or more, or lower the cluster's --election-timeout", minTTL))
}

// authCheck asks AuthStatus (etcd 3.5 and later). Older servers lack it,
// but the answer follows from having connected: with authentication on, an
// anonymous client's read (New makes one) is refused, and a user's
// credentials are refused when it is off.
func (b *Backend) authCheck(rctx reqCtx) lock.Check {
	ctx, cancel := rctx()
	defer cancel()
	if st, err := b.cli.AuthStatus(ctx); err == nil {
		return authVerdict(st.Enabled, b.user, b.prefix)
	}
	return authVerdict(b.user != "", b.user, b.prefix)
}

func authVerdict(enabled bool, user, prefix string) lock.Check {
	if !enabled {
		return lock.Check{Name: "auth", Status: lock.CheckWarning,
			Detail: "authentication is off: anyone who can reach etcd can take, break or delete distlock's locks",
			Fix:    fmt.Sprintf("etcdctl auth enable, and give distlock a user whose role has readwrite on %s/ (etcdctl role grant-permission ROLE --prefix readwrite %s/)", prefix, prefix)}
	}
	return lock.Check{Name: "auth", Status: lock.CheckOK, Detail: fmt.Sprintf("authentication is on; distlock connects as user %q", user)}
}

// tlsVerdict judges the endpoints' schemes: plaintext is fine to this
// machine only.
func tlsVerdict(endpoints []string) lock.Check {
	var plain []string
	remote := false
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme == "https" {
			continue
		}
		plain = append(plain, u.Host)
		ip := net.ParseIP(u.Hostname())
		remote = remote || u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback())
	}
	return lock.FirstCase("tls", []lock.Case{
		{When: len(plain) == 0, Detail: "TLS to every endpoint"},
		{When: !remote, Detail: "plaintext, to this machine only (loopback)"},
	}, lock.Case{Status: lock.CheckWarning,
		Detail: fmt.Sprintf("plaintext to %s: the lock traffic, and the password when there is one, cross the network unencrypted", strings.Join(plain, ", ")),
		Fix:    "serve etcd over TLS and use etcds:// with the cluster's CA (--etcd-cacert)"})
}

// redactEndpoint keeps an endpoint's host:port only.
func redactEndpoint(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		return u.Host
	}
	return ep
}

// clockLease is the measuring lease's TTL in seconds: long enough to
// outlast the measurement (lock.MeasureTickRate).
const clockLease = 10

// clockCheck measures how fast the leader's lease clock runs against ours:
// it reports a lease's time left in whole seconds, truncated, counted by
// its own (monotonic) clock.
func (b *Backend) clockCheck(ctx context.Context, rctx reqCtx) lock.Check {
	gctx, cancel := rctx()
	sent := time.Now()
	g, err := b.cli.Grant(gctx, clockLease)
	cancel()
	if err == nil {
		defer b.revoke(ctx, g.ID, "")
		var fast, unc float64
		var secs int64
		// The first tick comes about a second after the grant.
		fast, unc, secs, err = lock.MeasureTickRate(ctx, sent.Add(900*time.Millisecond), -1, func(context.Context) (int64, error) {
			tctx, cancel := rctx()
			defer cancel()
			r, err := b.cli.TimeToLive(tctx, g.ID)
			switch {
			case err != nil:
				return 0, err
			case r.TTL < 0:
				return 0, errors.New("the measuring lease expired early")
			}
			return r.TTL, nil
		})
		if err == nil {
			return lock.ClockRateCheck(fast, unc, fmt.Sprintf("a lease's countdown over %ds", secs))
		}
	}
	return lock.CannotCheck("clock", "measure the leader's lease clock", err, "make sure the clocks of the etcd servers and of this machine are synchronised (NTP)")
}
