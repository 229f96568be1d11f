package main

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"
)

// sentinel ready|killmaster|failover: the redis-sentinel engine's
// deployment (guard with [engine:redis-sentinel]).
//
//	ready       wait until the sentinels know each other (they introduce
//	            themselves every 2 s), so that they can agree on a failover
//	killmaster  SIGKILL the current master (as the sentinels name it);
//	            marks the moment as "killed" (see mark)
//	failover    wait until the sentinels name another master and it has a
//	            replica online; logs how long after the kill
//	stopreplicas, contreplicas
//	            SIGSTOP (and SIGCONT) every replica: nothing acknowledges
//	            the master's writes meanwhile
func cmdSentinel(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 1 || st.sentinel == nil {
		ts.Fatalf("usage: [engine:redis-sentinel] sentinel ready|killmaster|failover|stopreplicas|contreplicas")
	}
	s, h := st.sentinel, harnessOf(ts)
	ctx, cancel := context.WithTimeout(context.Background(), defaultWait)
	defer cancel()
	switch args[0] {
	case "ready":
		ts.Check(s.WaitAcquainted(ctx))
	case "killmaster":
		addr, err := s.MasterAddr(ctx)
		ts.Check(err)
		p := s.Node(addr)
		if p == nil {
			ts.Fatalf("the sentinels name %s, none of the deployment's nodes", addr)
		}
		ts.Check(p.Kill())
		h.marks["killed"] = time.Now()
		h.killedMaster = addr
		ts.Logf("%s: master %s SIGKILLed", time.Now().Format("15:04:05.000"), addr)
	case "failover":
		if h.killedMaster == "" {
			ts.Fatalf("sentinel failover: no sentinel killmaster before")
		}
		addr, err := s.WaitFailover(ctx, h.killedMaster, 1)
		ts.Check(err)
		ts.Logf("%s: failover to %s, %s after the kill", time.Now().Format("15:04:05.000"), addr, time.Since(h.marks["killed"]).Round(time.Millisecond))
	case "stopreplicas":
		for _, p := range s.Replicas {
			ts.Check(p.Stop())
		}
	case "contreplicas":
		for _, p := range s.Replicas {
			ts.Check(p.Cont())
		}
	default:
		ts.Fatalf("usage: sentinel ready|killmaster|failover|stopreplicas|contreplicas")
	}
}

// clustermasters N KEY...: the lock hashes of the KEYs (prefix distlock)
// exist and lie on N different masters of the redis-cluster engine's
// cluster, asked node by node.
func cmdClusterMasters(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) < 2 || st.cluster == nil {
		ts.Fatalf("usage: [engine:redis-cluster] clustermasters N KEY...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), defaultWait)
	defer cancel()
	var (
		mu    sync.Mutex
		found = map[string]string{} // key -> node
	)
	for _, p := range st.cluster.Nodes {
		c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), MaxRetries: -1})
		for _, k := range args[1:] {
			// EXISTS of a key another node serves answers MOVED.
			n, err := c.Exists(ctx, "distlock:{"+k+"}").Result()
			if err == nil && n == 1 {
				mu.Lock()
				found[k] = p.Addr()
				mu.Unlock()
			} else if err != nil && !strings.HasPrefix(err.Error(), "MOVED") {
				ts.Fatalf("node %s: %v", p.Addr(), err)
			}
		}
		c.Close()
	}
	nodes := map[string]bool{}
	for _, k := range args[1:] {
		n, ok := found[k]
		if !ok {
			ts.Fatalf("%s is held on no node", k)
		}
		nodes[n] = true
	}
	if len(nodes) != want {
		ts.Fatalf("the keys lie on %d masters, want %d: %v", len(nodes), want, found)
	}
}

// redlocknode kill|restart I: SIGKILL (or restart, empty) the redlock
// engine's master number I (0-based). redlocknode held I KEY TOKENFILE, redlocknode renewed I KEY:
// wait until master I holds KEY, or until a renewal of it reached master
// I (commands_redlock_test.go).
func cmdRedlockNode(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) < 2 || st.masters == nil {
		ts.Fatalf("usage: [engine:redlock] redlocknode kill|restart I, redlocknode held I KEY TOKENFILE, redlocknode renewed I KEY")
	}
	i, err := strconv.Atoi(args[1])
	if err != nil || i < 0 || i >= len(st.masters.Nodes) {
		ts.Fatalf("redlocknode: no master %s", args[1])
	}
	p := st.masters.Nodes[i]
	if len(args) == 4 && args[0] == "held" || len(args) == 3 && args[0] == "renewed" {
		redlockNodeWait(ts, i, p, args[0], args[2], args[len(args)-1])
		return
	}
	if len(args) != 2 {
		ts.Fatalf("usage: redlocknode kill|restart I, redlocknode held I KEY TOKENFILE, redlocknode renewed I KEY")
	}
	switch args[0] {
	case "kill":
		ts.Check(p.Kill())
		ts.Logf("%s: master %d (%s) SIGKILLed", time.Now().Format("15:04:05.000"), i, p.Addr())
	case "restart":
		ts.Check(p.Restart())
		ts.Logf("%s: master %d (%s) restarted empty", time.Now().Format("15:04:05.000"), i, p.Addr())
	default:
		ts.Fatalf("usage: redlocknode kill|restart I")
	}
}
