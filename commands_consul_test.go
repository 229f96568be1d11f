package main

import (
	"context"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// consul killleader|killfirst (the consul3 engine):
//
//   - killleader: SIGKILL the Raft leader (marked "killed", as sentinel
//     killmaster marks its kill), then wait until the living servers have
//     elected another.
//   - killfirst: SIGKILL the first server of DISTLOCK_BACKEND (marked
//     "killed"): the server distlock talks to.
func cmdConsul(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 1 || st.consul == nil {
		ts.Fatalf("usage: consul killleader|killfirst (the consul3 engine)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultWait)
	defer cancel()
	leader, err := st.consul.Leader(ctx)
	ts.Check(err)
	switch args[0] {
	case "killleader":
		harnessOf(ts).marks["killed"] = time.Now()
		ts.Check(leader.Kill())
		ts.Logf("killed the leader, %s", leader.Addr())
		waitUntil(ts, "a new Consul leader", defaultWait, func() bool {
			p, err := st.consul.Leader(ctx)
			return err == nil && p != leader // the killed one cannot answer: a living server names p
		})
	case "killfirst":
		first, _, _ := strings.Cut(strings.TrimPrefix(ts.Getenv("DISTLOCK_BACKEND"), "consul://"), ",")
		for _, p := range st.consul.Servers {
			if p.Addr() == first {
				harnessOf(ts).marks["killed"] = time.Now()
				ts.Check(p.Kill())
				return
			}
		}
		ts.Fatalf("no server of the cluster is at %s", first)
	default:
		ts.Fatalf("usage: consul killleader|killfirst")
	}
}
