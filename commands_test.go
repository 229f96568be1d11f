package main

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/internal/backend"
)

// scriptCommands are the harness's own scenario commands. Every wait has a
// deadline; none of them sleeps as an assertion.
var scriptCommands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"waitfile":         cmdWaitFile,
	"waitstatus":       cmdWaitStatus,
	"signal":           cmdSignal,
	"ff":               cmdFastForward,
	"tokensrise":       cmdTokensRise,
	"proxy":            cmdProxy,
	"server":           cmdServer,
	"deadbeforeexpiry": cmdDeadBeforeExpiry,
}

// defaultWait bounds every wait in the harness.
const defaultWait = 20 * time.Second

// waitUntil polls cond every 10ms until it holds or the deadline passes.
func waitUntil(ts *testscript.TestScript, what string, timeout time.Duration, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			ts.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// timeoutArg takes an optional leading "-t DURATION".
func timeoutArg(ts *testscript.TestScript, args []string) (time.Duration, []string) {
	if len(args) >= 2 && args[0] == "-t" {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		return d, args[2:]
	}
	return defaultWait, args
}

// waitfile [-t D] PATH...: wait until every file exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitfile")
	}
	timeout, args := timeoutArg(ts, args)
	if len(args) == 0 {
		ts.Fatalf("usage: waitfile [-t D] PATH...")
	}
	for _, a := range args {
		path := ts.MkAbs(a)
		waitUntil(ts, "file "+a, timeout, func() bool {
			_, err := os.Stat(path)
			return err == nil
		})
	}
}

// waitstatus [-t D] KEY held|free: wait until the engine reports KEY so.
func cmdWaitStatus(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 2 || (args[1] != "held" && args[1] != "free") {
		ts.Fatalf("usage: waitstatus [-t D] KEY held|free")
	}
	ctx := context.Background()
	b, err := backend.Open(ctx, ts.Getenv("DISTLOCK_BACKEND"), backend.Options{Prefix: "distlock", ConnectTimeout: 5 * time.Second})
	ts.Check(err)
	defer b.Close()
	want := args[1] == "held"
	waitUntil(ts, args[0]+" "+args[1], timeout, func() bool {
		_, held, err := b.Inspect(ctx, args[0])
		return err == nil && held == want
	})
}

// signal SIG PIDFILE: send a signal to the pid written in PIDFILE.
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: signal SIG PIDFILE")
	}
	sigs := map[string]syscall.Signal{
		"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
		"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	}
	sig, ok := sigs[args[0]]
	if !ok {
		ts.Fatalf("unknown signal %s", args[0])
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[1])))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, sig))
}

// ff DURATION: advance miniredis's clock (it never counts TTLs down by
// itself). Only valid on miniredis: guard it with [engine:miniredis].
func cmdFastForward(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 1 || st.mini == nil {
		ts.Fatalf("usage: [engine:miniredis] ff DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	st.mini.FastForward(d)
}

// tokensrise FILE: every line of FILE is a token greater than the one before.
func cmdTokensRise(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tokensrise FILE")
	}
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile(args[0])))
	var last uint64
	n := 0
	for sc.Scan() {
		tok, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			ts.Fatalf("line %d of %s is not a token: %q", n+1, args[0], sc.Text())
		}
		if n > 0 && tok <= last {
			ts.Fatalf("token %d on line %d is not greater than %d before it", tok, n+1, last)
		}
		last = tok
		n++
	}
	if n < 2 {
		ts.Fatalf("%s holds %d tokens; need at least 2 to compare", args[0], n)
	}
}

// proxy pause|resume|drop|heal: fault the traffic between distlock and a
// network engine.
func cmdProxy(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 1 || st.proxy == nil {
		ts.Fatalf("usage: proxy pause|resume|drop|heal (network engines only)")
	}
	switch args[0] {
	case "pause":
		st.proxy.Pause()
	case "resume":
		st.proxy.Resume()
	case "drop":
		st.proxy.Drop()
	case "heal":
		st.proxy.Heal()
	default:
		ts.Fatalf("usage: proxy pause|resume|drop|heal")
	}
}

// server stop|cont|kill|restart: control a real server process.
func cmdServer(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 1 || st.server == nil {
		ts.Fatalf("usage: [real] server stop|cont|kill|restart")
	}
	var err error
	switch args[0] {
	case "stop":
		err = st.server.Stop()
	case "cont":
		err = st.server.Cont()
	case "kill":
		err = st.server.Kill()
	case "restart":
		err = st.server.Restart()
	default:
		ts.Fatalf("usage: server stop|cont|kill|restart")
	}
	ts.Check(err)
}

// deadbeforeexpiry PIDFILE KEY: wait until the process in PIDFILE is gone,
// then check at once, on the server directly (not through the proxy and not
// by asking distlock), that KEY's lease has not expired yet: the child died
// while the lease still protected it. Prints the margin that was left.
func cmdDeadBeforeExpiry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: deadbeforeexpiry PIDFILE KEY")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	ctx := context.Background()
	direct := ts.Getenv("DISTLOCK_DIRECT_BACKEND")
	if direct == "" {
		ts.Fatalf("deadbeforeexpiry needs a network engine")
	}
	b, err := backend.Open(ctx, direct, backend.Options{Prefix: "distlock", ConnectTimeout: 5 * time.Second})
	ts.Check(err)
	defer b.Close()
	deadline := time.Now().Add(defaultWait)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			ts.Fatalf("process %d still alive after %s", pid, defaultWait)
		}
		time.Sleep(time.Millisecond)
	}
	h, held, err := b.Inspect(ctx, args[1])
	ts.Check(err)
	if !held {
		ts.Fatalf("the lease on %s had already expired on the server when the child was seen dead", args[1])
	}
	ts.Logf("child dead with %s of the lease left on the server", h.ExpiresIn)
}

// waitqueue [-t D] KEY N: wait until N waiters are queued for KEY in the
// Redis engine's fair queue, read on the server directly (not through the
// proxy). Only valid on Redis: guard it with [engine:redis].
func init() { scriptCommands["waitqueue"] = cmdWaitQueue }

func cmdWaitQueue(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: [engine:redis] waitqueue [-t D] KEY N")
	}
	want, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	ctx := context.Background()
	b, err := backend.Open(ctx, ts.Getenv("DISTLOCK_DIRECT_BACKEND"), backend.Options{Prefix: "distlock", ConnectTimeout: 5 * time.Second})
	ts.Check(err)
	defer b.Close()
	q, ok := b.(interface {
		QueueLen(ctx context.Context, key string) (int64, error)
	})
	if !ok {
		ts.Fatalf("waitqueue: the engine has no fair queue (Redis only)")
	}
	waitUntil(ts, args[1]+" waiters queued for "+args[0], timeout, func() bool {
		n, err := q.QueueLen(ctx, args[0])
		return err == nil && n == want
	})
}
