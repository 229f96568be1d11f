package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/wait"
)

// allCommands is the one table of the harness's own scenario commands.
// Every wait has a deadline; none of them sleeps as an assertion.
func allCommands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// waiting for a condition (commands_test.go, commands_env_test.go)
		"waitfile":   cmdWaitFile,
		"waitstatus": cmdWaitStatus,
		"waitgrep":   cmdWaitGrep,
		"waitdead":   cmdWaitDead,
		"waitqueue":  cmdWaitQueue,
		// faults and the engine itself
		"proxy":          cmdProxy,
		"server":         cmdServer,
		"ff":             cmdFastForward,
		"enginepassword": cmdEnginePassword, // commands_secret_test.go
		"rediscmd":       cmdRedisCmd,       // commands_ops_test.go
		"sentinel":       cmdSentinel,       // commands_topology_test.go
		"clustermasters": cmdClusterMasters, // commands_topology_test.go
		"redlocknode":    cmdRedlockNode,    // commands_topology_test.go
		"consul":         cmdConsul,         // commands_consul_test.go
		"wipe":           cmdWipe,           // commands_wipe_test.go
		// what the engine says
		"tokensrise":       cmdTokensRise,
		"deadbeforeexpiry": cmdDeadBeforeExpiry,
		"killtiming":       cmdKillTiming,
		"mark":             cmdMark,
		"renewedafter":     cmdRenewedAfter,
		"heldby":           cmdHeldBy,
		// processes, groups and terminals (commands_proc_test.go, commands_term_test.go)
		"signal":    cmdSignal,
		"procstate": cmdProcState,
		"watcher":   cmdWatcher,
		"idlepin":   cmdIdlePin,
		"decoy":     cmdDecoy,
		"running":   cmdRunning,
		"flockrace": cmdFlockRace,
		"pgid":      cmdPgid,
		"term":      cmdTerm,
		// files distlock writes (commands_env_test.go, commands_ops_test.go)
		"envfile":    cmdEnvFile,
		"doctorjson": cmdDoctorJSON,
		"promcheck":  cmdPromCheck,
	}
}

// defaultWait bounds every wait in the harness.
const defaultWait = 20 * time.Second

// waitUntil polls cond until it holds or the deadline passes (wait.Until).
func waitUntil(ts *testscript.TestScript, what string, timeout time.Duration, cond func() bool) {
	wait.Until(ts, timeout, what, cond)
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
		// WINCH asks a holding distlock to renew now (what a local break does).
		"WINCH": syscall.SIGWINCH,
		// Job control.
		"TSTP": syscall.SIGTSTP, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
	}
	sig, ok := sigs[args[0]]
	if !ok {
		ts.Fatalf("unknown signal %s", args[0])
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[1])))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, sig))
	if sig == syscall.SIGTSTP || sig == syscall.SIGSTOP {
		// Should the script fail while it is stopped, the process must
		// be able to end when testscript interrupts it.
		ts.Defer(func() { syscall.Kill(pid, syscall.SIGCONT) })
	}
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
// network engine. proxy refused N: wait until N connections were refused
// since the last drop (clients kept trying to reconnect).
func cmdProxy(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) < 1 || st.proxy == nil {
		ts.Fatalf("usage: proxy pause|resume|drop|heal|refused N (network engines only)")
	}
	if args[0] == "refused" && len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		waitUntil(ts, fmt.Sprintf("%d refused connections", n), 20*time.Second, func() bool { return st.proxy.Refused() >= n })
		return
	}
	if len(args) != 1 {
		ts.Fatalf("usage: proxy pause|resume|drop|heal|refused N")
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

// server stop|cont|kill|restart: control a real server process. Before a
// stop the script's direct connection to the server is opened (see
// direct), so that a read right after the server is continued does not
// have to dial first.
func cmdServer(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 1 || st.server == nil {
		ts.Fatalf("usage: [real] server stop|cont|kill|restart")
	}
	var err error
	switch args[0] {
	case "stop":
		harnessOf(ts).stopRev = warmDirect(ts)
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

// harness is what the harness commands remember during one script.
type harness struct {
	direct lock.Backend         // to the server itself, not through the proxy
	etcd   *clientv3.Client     // the same, for etcd's lease API
	marks  map[string]time.Time // mark NAME
	// stopRev is the etcd revision read just before the last server stop.
	stopRev int64
	thaw    map[int]func() // watcher freeze
	// killedMaster is the address of the master sentinel killmaster killed.
	killedMaster string
}

// close drops what the harness opened for its script.
func (h *harness) close() {
	if h.direct != nil {
		h.direct.Close()
	}
	if h.etcd != nil {
		h.etcd.Close()
	}
}

// harnessOf returns the script's harness state, kept with the script's
// engine state (made in Setup, closed when the script ends).
func harnessOf(ts *testscript.TestScript) *harness { return stateOf(ts).harness }

// direct is the script's connection to the engine's server that bypasses
// the fault proxy (DISTLOCK_DIRECT_BACKEND): what the server itself says,
// not what distlock thinks. It is opened on first use and kept.
func direct(ts *testscript.TestScript) lock.Backend {
	h := harnessOf(ts)
	if h.direct == nil {
		url := ts.Getenv("DISTLOCK_DIRECT_BACKEND")
		if url == "" {
			ts.Fatalf("this command needs a network engine (no DISTLOCK_DIRECT_BACKEND)")
		}
		b, err := backend.Open(context.Background(), url, backend.Options{Prefix: "distlock", ConnectTimeout: 5 * time.Second})
		ts.Check(err)
		h.direct = b
	}
	return h.direct
}

// directEtcd is a plain etcd client to the server itself, or nil when the
// engine is not etcd. Opened on first use and kept.
func directEtcd(ts *testscript.TestScript) *clientv3.Client {
	h := harnessOf(ts)
	ep, ok := strings.CutPrefix(ts.Getenv("DISTLOCK_DIRECT_BACKEND"), "etcd://")
	if !ok {
		return nil
	}
	if h.etcd == nil {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		ts.Check(err)
		h.etcd = c
	}
	return h.etcd
}

// etcdHolder reads KEY's holder on etcd directly: its token (from its
// record) and its lease; as of revision rev, if not 0.
func etcdHolder(c *clientv3.Client, key string, rev int64) (uint64, clientv3.LeaseID, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := clientv3.WithFirstCreate()
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := c.Get(ctx, "distlock/"+url.PathEscape(key)+"/", opts...)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, 0, fmt.Errorf("%s is free", key)
	}
	// The token is in the holder's record (not its create revision, the
	// queue's order: internal/backend/etcd/token.go).
	var rec struct {
		Token uint64 `json:"token"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return 0, 0, fmt.Errorf("the holder's record of %s: %w", key, err)
	}
	return rec.Token, clientv3.LeaseID(resp.Kvs[0].Lease), nil
}

// etcdLeaseLive is the strict check on etcd, where a holder's key outlives
// its expired lease until the leader revokes it: the server accepts a
// keep-alive of a lease only if it has not expired (a keep-alive of an
// expired lease waits for its revocation and fails). It prolongs the
// lease, which does no harm to a holder that has already given up.
func etcdLeaseLive(c *clientv3.Client, lease clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.KeepAliveOnce(ctx, lease)
	return err
}

// warmDirect opens the script's direct connections and makes one request
// on each, so that a check right after a death does not pay for a dial.
// On etcd it returns the revision it read at (0 elsewhere).
func warmDirect(ts *testscript.TestScript) int64 {
	direct(ts)
	if c := directEtcd(ts); c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Get(ctx, "distlock/", clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		ts.Check(err)
		return resp.Header.Revision
	}
	return 0
}

// alive reports whether process pid is running. A zombie (exited, not yet
// reaped: its parent may be dead too) is not running.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// termPending reports whether a SIGTERM is pending for process pid: sent,
// and not yet taken by the process (which needs the CPU to take it).
func termPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	const bit = 1 << (syscall.SIGTERM - 1)
	for line := range strings.SplitSeq(string(b), "\n") {
		name, mask, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&bit != 0 {
			return true
		}
	}
	return false
}

// death is when a watched process died: after lastAlive, before dead.
// termSeen, if not zero, is when a SIGTERM was first seen pending for it:
// the SIGTERM was sent by then.
type death struct {
	lastAlive, dead time.Time
	termSeen        time.Time
}

// waitDeath polls pid every millisecond until it has exited, and brackets
// the moment it died. It fails the script after timeout.
func waitDeath(ts *testscript.TestScript, pid int, timeout time.Duration) death {
	d, err := pollDeath(pid, timeout)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return d
}

func pollDeath(pid int, timeout time.Duration) (death, error) {
	deadline := time.Now().Add(timeout)
	var d death
	for {
		before := time.Now()
		if !alive(pid) {
			d.dead = time.Now()
			if d.lastAlive.IsZero() {
				d.lastAlive = before // already dead when we looked first
			}
			return d, nil
		}
		d.lastAlive = before
		if d.termSeen.IsZero() && termPending(pid) {
			d.termSeen = before
		}
		if before.After(deadline) {
			return d, fmt.Errorf("process %d still alive after %s", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func readPID(ts *testscript.TestScript, file string) int {
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(file)))
	ts.Check(err)
	return pid
}

// readTermTime reads FILE's first line: the wall-clock time in ns at which
// the child's TERM trap ran (`date +%s%N`). The signal was sent at or
// before that moment.
func readTermTime(ts *testscript.TestScript, file string) time.Time {
	line, _, _ := strings.Cut(strings.TrimSpace(ts.ReadFile(file)), "\n")
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		ts.Fatalf("%s does not hold a time in ns: %q", file, line)
	}
	return time.Unix(0, ns)
}

func readToken(ts *testscript.TestScript, file string) uint64 {
	tok, err := strconv.ParseUint(strings.TrimSpace(ts.ReadFile(file)), 10, 64)
	ts.Check(err)
	return tok
}

// waitdead [-t D] PIDFILE: wait until the process in PIDFILE has exited.
func cmdWaitDead(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitdead [-t D] PIDFILE")
	}
	waitDeath(ts, readPID(ts, args[0]), timeout)
}

// killtiming [-t D] PIDFILE TERMFILE MIN MAX: the child in PIDFILE ignores
// SIGTERM and recorded when its TERM trap ran in TERMFILE; wait until it is
// dead and check that it died (by SIGKILL) no sooner than MIN and no later
// than MAX after the SIGTERM. Both checks lean the strict way: the death
// is bracketed by polling, and the trap runs after the signal was sent,
// so "no sooner" is checked against the last moment it was seen alive.
func cmdKillTiming(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 4 {
		ts.Fatalf("usage: killtiming [-t D] PIDFILE TERMFILE MIN MAX")
	}
	pid := readPID(ts, args[0])
	lo, err := time.ParseDuration(args[2])
	ts.Check(err)
	hi, err := time.ParseDuration(args[3])
	ts.Check(err)
	d := waitDeath(ts, pid, timeout)
	term := readTermTime(ts, args[1])
	checkKillTiming(ts, d, term, lo, &hi)
}

func checkKillTiming(ts *testscript.TestScript, d death, term time.Time, lo time.Duration, hi *time.Duration) {
	early, late := d.lastAlive.Sub(term), d.dead.Sub(term)
	ts.Logf("child died between %s and %s after its TERM trap ran", early.Round(time.Millisecond), late.Round(time.Millisecond))
	// The SIGTERM was sent by the time the trap ran, and by the time it was
	// seen pending: the trap waits for the child to be scheduled, which on
	// a loaded machine can be 100ms and more after the signal. The earlier
	// of the two is the closer bound on when it was sent.
	if !d.termSeen.IsZero() && d.termSeen.Before(term) {
		early = d.lastAlive.Sub(d.termSeen)
		ts.Logf("the SIGTERM was seen pending %s before the trap ran: the child died at least %s after it", term.Sub(d.termSeen).Round(time.Millisecond), early.Round(time.Millisecond))
	}
	if early < lo {
		ts.Fatalf("the child was dead %s after SIGTERM; the kill must not come before %s", early.Round(time.Millisecond), lo)
	}
	if hi != nil && late > *hi {
		ts.Fatalf("the child was still alive %s after SIGTERM; it must be killed within %s", late.Round(time.Millisecond), *hi)
	}
}

// deadbeforeexpiry [-cont] [-token TOKENFILE] [-term TERMFILE MIN] PIDFILE KEY:
// wait until the process in PIDFILE is gone, then check at once, on the
// server directly (not through the proxy and not by asking distlock), that
// KEY is still held — by the token in TOKENFILE, if given: the child died
// while the lease still protected it. Prints the margin that was left.
//
// -cont: the server was stopped (server stop) and the traffic from
// distlock held (proxy pause, right after the stop); continue the server
// as soon as the child is dead and ask it at once. That is sound: a stopped
// server's clock keeps running, and once it runs again it judges every
// lease by that clock before it answers us, so the lease still valid then
// means it was valid when the child died. The proxy must be paused, or the
// release that distlock sends once its child is dead would reach the
// server first and free the key; held traffic is all the same to distlock,
// which cannot tell a frozen server from a silent network.
//
// -term TERMFILE MIN: also check that the child (which ignores SIGTERM and
// recorded in TERMFILE when its TERM trap ran) was killed no sooner than
// MIN after the SIGTERM.
//
// What "still held" means per engine: on Redis the key exists only until
// its TTL has passed (an expired key is never returned). On etcd an
// expired lease's keys stay until the leader revokes it (checked every
// 500ms), so the key's existence is not enough: the lease's last grant or
// keep-alive the server answered, as the fault proxy forwarded it, plus
// its TTL must be after the death, or else the server must still accept
// a keep-alive of the lease (etcdDeadBeforeExpiry). On PostgreSQL and
// MySQL an expired lease's row stays until the key is taken again, so the
// check is exact: the lease's time left when the server read it, plus the
// time from the death to the question, must be positive (LeaseLeft). On
// miniredis TTLs never count down, so the check is vacuous there.
func cmdDeadBeforeExpiry(ts *testscript.TestScript, neg bool, args []string) {
	var (
		cont              bool
		tokenFile         string
		termFile, termMin string
	)
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "-cont":
			cont, args = true, args[1:]
		case args[0] == "-token" && len(args) > 1:
			tokenFile, args = args[1], args[2:]
		case args[0] == "-term" && len(args) > 2:
			termFile, termMin, args = args[1], args[2], args[3:]
		default:
			ts.Fatalf("unknown option %s", args[0])
		}
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: deadbeforeexpiry [-cont] [-token TOKENFILE] [-term TERMFILE MIN] PIDFILE KEY")
	}
	st := stateOf(ts)
	if cont && st.server == nil {
		ts.Fatalf("deadbeforeexpiry -cont needs a real server")
	}
	pid := readPID(ts, args[0])
	var want uint64
	if tokenFile != "" {
		want = readToken(ts, tokenFile)
	}
	if !cont { // else the stopped server cannot answer; server stop warmed up
		warmDirect(ts)
	}
	b, ec := direct(ts), directEtcd(ts)
	// On etcd, find the holder's lease first (while the server runs), so
	// that after the death one request, the keep-alive, settles it.
	var (
		etok  uint64
		lease clientv3.LeaseID
		err   error
	)
	if ec != nil && !cont {
		etok, lease, err = etcdHolder(ec, args[1], 0)
		ts.Check(err)
	}
	var sampled *leaseEnd // the lease's end as read before the death (leaseend_test.go)
	if !cont && ec == nil {
		sampled = sampleLeaseEnd(b, args[1], want)
	}
	d := waitDeath(ts, pid, defaultWait)
	var end time.Time
	if sampled != nil {
		end = sampled.finish()
	}
	if cont {
		ts.Check(st.server.Cont())
	}
	if ec != nil {
		if cont {
			// Read at the revision the server was stopped at: a lease that
			// has ended since is revoked (with its key) as soon as the
			// server runs, and what counts is the holder it had then.
			if etok, lease, err = etcdHolder(ec, args[1], harnessOf(ts).stopRev); err != nil {
				ts.Fatalf("no holder of %s on the server when it was stopped: %v", args[1], err)
			}
		}
		if want != 0 && etok != want {
			ts.Fatalf("%s is held by token %d on the server, not by the child's token %d", args[1], etok, want)
		}
		etcdDeadBeforeExpiry(ts, st.etcdLeases, ec, args[1], lease, d)
		checkTermTiming(ts, termFile, termMin, d)
		return
	}
	h, held, err := b.Inspect(context.Background(), args[1])
	checked := time.Now()
	ts.Check(err)
	atDeath := false // held was judged at the death, from LeaseLeft
	if !held && want != 0 {
		// Expired by the time the server answered. Engines that keep an
		// expired lease's row say by how much (LeaseLeft, negative): the
		// server's clock ran on from the child's death until it read the
		// row, at least as long as it took us to ask, so it was still
		// valid at the death if left + (asked - dead) > 0. (dead is when
		// the death was seen, after it happened: this is conservative.)
		if ll, ok := b.(interface {
			LeaseLeft(ctx context.Context, key string, token uint64) (time.Duration, bool, error)
		}); ok {
			asked := time.Now()
			left, found, err := ll.LeaseLeft(context.Background(), args[1], want)
			ts.Check(err)
			if found && left+asked.Sub(d.dead) > 0 {
				ts.Logf("process seen dead; %s later the server read the lease as %s past its end: it had %s left at the death", asked.Sub(d.dead).Round(100*time.Microsecond), (-left).Round(100*time.Microsecond), (left + asked.Sub(d.dead)).Round(100*time.Microsecond))
				held, h, atDeath = true, lock.Holder{Key: args[1], Token: want}, true
			}
		}
	}
	if !held && end.After(d.dead) {
		ts.Logf("process seen dead; a read sent before then found the lease ending %s after that", end.Sub(d.dead).Round(100*time.Microsecond))
		held, h, atDeath = true, lock.Holder{Key: args[1], Token: want}, true
	}
	if !held {
		ts.Fatalf("the lease on %s had already expired on the server when the child was seen dead", args[1])
	}
	if want != 0 && h.Token != want {
		ts.Fatalf("%s is held by token %d on the server, not by the child's token %d", args[1], h.Token, want)
	}
	if ec == nil && !atDeath {
		ts.Logf("process seen dead; %s later the server still had %s of the lease left", checked.Sub(d.dead).Round(100*time.Microsecond), h.ExpiresIn)
	}
	if st.sessions != nil { // Consul: the session's own earliest expiry
		consulDeadBeforeExpiry(ts, st.sessions, args[1], want, d.dead)
	}
	checkTermTiming(ts, termFile, termMin, d)
}

// checkTermTiming is deadbeforeexpiry's -term TERMFILE MIN check (none
// when termFile is empty).
func checkTermTiming(ts *testscript.TestScript, termFile, termMin string, d death) {
	if termFile == "" {
		return
	}
	lo, err := time.ParseDuration(termMin)
	ts.Check(err)
	checkKillTiming(ts, d, readTermTime(ts, termFile), lo, nil)
}

// etcdDeadBeforeExpiry fails the script unless etcd lease lease (of KEY's
// holder) was still alive when the child was seen dead, at dead. First by
// the fault proxy's record of the lease's last grant or keep-alive that
// the server answered (etcdLeases): it ended no sooner than that request
// was forwarded plus its TTL, whenever the server is asked; that needs
// nothing of the server after the death. Failing that (the proxy saw no
// such answer late enough: one may have been held by a pause), by a
// keep-alive the server still accepts now (etcdLeaseLive), which proves
// it only if it arrives before the lease's end: on a loaded machine,
// tens of milliseconds after the death, which may be longer than the
// margin the holder left.
func etcdDeadBeforeExpiry(ts *testscript.TestScript, el *etcdLeases, ec *clientv3.Client, key string, lease clientv3.LeaseID, d death) {
	dead := d.dead
	if el != nil {
		if s, ok := el.lastSent(int64(lease)); ok {
			left := s.sent.Add(s.ttl).Sub(dead)
			if left > 0 {
				ts.Logf("the child was seen dead %s before its etcd lease could end (its last grant or keep-alive the server answered, forwarded at %s, + TTL %s)", left.Round(100*time.Microsecond), s.sent.Format(time.StampMicro), s.ttl)
				return
			}
			ts.Logf("the lease's last grant or keep-alive seen answered, forwarded at %s, + TTL %s was %s before the death; asking the server", s.sent.Format(time.StampMicro), s.ttl, (-left).Round(100*time.Microsecond))
		}
	}
	if err := etcdLeaseLive(ec, lease); err != nil {
		ts.Fatalf("the lease on %s had already expired on the server when the child was seen dead (%s after it was last seen alive; %s later the server was asked): %v", key, d.dead.Sub(d.lastAlive).Round(100*time.Microsecond), time.Since(dead).Round(100*time.Microsecond), err)
	}
	ts.Logf("process seen dead; %s later the server still accepted a keep-alive of the lease", time.Since(dead).Round(100*time.Microsecond))
}

// mark NAME: remember this moment as NAME.
func cmdMark(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mark NAME")
	}
	harnessOf(ts).marks[args[0]] = time.Now()
}

// renewedafter [-t D] MARK KEY TTL TOKENFILE: wait until TTL (and a little)
// has passed since MARK, then until the server itself (directly) shows KEY
// held by the token in TOKENFILE with a lease that ends more than TTL/2
// after that. Such a lease comes from a renewal the server processed well
// after MARK (after MARK+TTL/2), so renewal recovered from whatever fault
// MARK began, on the server's side; and since the holder's own reckoning
// of validity from before MARK has run out, its child can only still be
// running because the holder saw that renewal succeed. Lower bounds only:
// etcd reports whole seconds, rounded down. (miniredis never counts TTLs
// down, so there only the holder's side is tested.)
func cmdRenewedAfter(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 4 {
		ts.Fatalf("usage: renewedafter [-t D] MARK KEY TTL TOKENFILE")
	}
	mark, ok := harnessOf(ts).marks[args[0]]
	if !ok {
		ts.Fatalf("no mark %s", args[0])
	}
	ttl, err := time.ParseDuration(args[2])
	ts.Check(err)
	want := readToken(ts, args[3])
	// A request already under way when the fault began may land a little
	// after MARK.
	const slack = 200 * time.Millisecond
	after := mark.Add(ttl + slack)
	time.Sleep(time.Until(after))
	endsAfter := after.Add(ttl / 2)
	b := direct(ts)
	deadline := time.Now().Add(timeout)
	for {
		sent := time.Now()
		h, held, err := b.Inspect(context.Background(), args[1])
		var last string
		switch {
		case err != nil:
			last = err.Error()
		case !held:
			last = "it is free"
		case h.Token != want:
			last = fmt.Sprintf("it is held by token %d, not %d", h.Token, want)
		case h.ExpiresIn < 0 && stateOf(ts).engine.kind == "zookeeper":
			// A session's time left is the server's alone to know; but the
			// server deletes a session's nodes once it has not heard from
			// it for its timeout (the TTL, granted as asked on the test
			// server) plus a tick: our node still there now, past
			// MARK+TTL+slack, means the session was heard from after MARK.
			// (Not across a restart: a restarted server gives every session
			// a fresh timeout; see zookeeper/restart_keeps_session.)
			ts.Logf("%s is still held by its session after %s+%s: the server heard from it after %s", args[1], args[0], ttl+slack, args[0])
			return
		case h.ExpiresIn < 0 && isConsul(stateOf(ts).engine):
			// Consul deletes a session's keys once it has not heard from it
			// for at least its TTL and at most twice that (its session
			// timers run for 2×TTL): our entry still there past
			// MARK+2×TTL+slack means the session was heard from after MARK.
			if late := mark.Add(2*ttl + slack); time.Now().Before(late) {
				time.Sleep(time.Until(late))
				continue
			}
			ts.Logf("%s is still held by its session after %s+%s: the server heard from it after %s", args[1], args[0], 2*ttl+slack, args[0])
			return
		case h.ExpiresIn < 0 || !sent.Add(h.ExpiresIn).After(endsAfter):
			last = fmt.Sprintf("it expires in %s", h.ExpiresIn)
		default:
			ts.Logf("%s renewed: its lease ends at least %s after %s", args[1], sent.Add(h.ExpiresIn).Sub(mark).Round(time.Millisecond), args[0])
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no renewal of %s after %s seen on the server within %s: %s", args[1], args[0], timeout, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isConsul: e runs the Consul engine (a dev agent or a cluster).
func isConsul(e *engine) bool { return e.kind == "consul" || e.family == "consul" }

// heldby KEY TOKENFILE: the server itself (directly) says KEY is held by
// the token in TOKENFILE.
func cmdHeldBy(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: [!] heldby KEY TOKENFILE")
	}
	want := readToken(ts, args[1])
	h, held, err := direct(ts).Inspect(context.Background(), args[0])
	ts.Check(err)
	ok := held && h.Token == want
	switch {
	case ok && neg:
		ts.Fatalf("%s is held by token %d", args[0], want)
	case !ok && !neg && !held:
		ts.Fatalf("%s is free on the server, not held by token %d", args[0], want)
	case !ok && !neg:
		ts.Fatalf("%s is held by token %d on the server, not %d", args[0], h.Token, want)
	}
}

// waitqueue [-t D] KEY N: wait until N waiters are in line for KEY in the
// engine's fair queue (Redis, etcd: mutex and semaphore waiters alike), read
// on the server directly (not through the proxy). Only valid on engines
// that queue waiters: guard it with [fair].
func cmdWaitQueue(ts *testscript.TestScript, neg bool, args []string) {
	timeout, args := timeoutArg(ts, args)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: [fair] waitqueue [-t D] KEY N")
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
		ts.Fatalf("waitqueue: the engine keeps no line of waiters (guard with [fair])")
	}
	waitUntil(ts, args[1]+" waiters queued for "+args[0], timeout, func() bool {
		n, err := q.QueueLen(ctx, args[0])
		return err == nil && n == want
	})
}
