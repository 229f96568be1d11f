package main

import (
	"context"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/rogpeppe/go-internal/testscript"
)

// consul put PATH VALUE | killleader | killfirst:
//
//   - put: write VALUE at PATH in the KV store of the first server (the
//     consul and consul3 engines), as something else than distlock would.
//   - killleader: SIGKILL the Raft leader (marked "killed", as sentinel
//     killmaster marks its kill), then wait until the living servers have
//     elected another.
//   - killfirst: SIGKILL the first server of DISTLOCK_BACKEND (marked
//     "killed"): the server distlock talks to.
func cmdConsul(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	ctx, cancel := context.WithTimeout(context.Background(), defaultWait)
	defer cancel()
	if !neg && len(args) == 3 && args[0] == "put" && st.server != nil && strings.HasPrefix(ts.Getenv("DISTLOCK_BACKEND"), "consul://") {
		c, err := api.NewClient(&api.Config{Address: st.server.Addr()})
		ts.Check(err)
		_, err = c.KV().Put(&api.KVPair{Key: args[1], Value: []byte(args[2])}, (&api.WriteOptions{}).WithContext(ctx))
		ts.Check(err)
		return
	}
	if neg || len(args) != 1 || st.consul == nil {
		ts.Fatalf("usage: consul put PATH VALUE (a Consul engine) | consul killleader|killfirst (the consul3 engine)")
	}
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
