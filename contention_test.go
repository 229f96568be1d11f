package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend"
	"github.com/distlock/distlock/internal/lock"
	"github.com/distlock/distlock/internal/testenv/faultproxy"
	"github.com/distlock/distlock/internal/testenv/server"
)

// Contention: many real distlock processes fight over one key while the
// network to the engine is faulted, and a critical section that detects
// overlap runs under the lock. This is mutual exclusion (docs/GUARANTEES.md) and
// rising fencing tokens (§1.5) demonstrated end to end, under the faults
// that make peers fail: short pauses that renewal must ride out, pauses
// longer than the TTL that must cost the holder its lease (and its child)
// before anyone else gets the lock, and connection resets.
const (
	contentionProcs  = 16
	contentionRounds = 25
	contentionTTL    = 2 * time.Second
	// contentionDeadline bounds one engine's whole run; the run normally
	// takes well under a minute.
	contentionDeadline = 3 * time.Minute
)

// criticalSection is the command run under the lock. `set -C` makes `>`
// fail if the marker exists (O_EXCL): someone else is inside. The marker
// names its owner's pid, so that a marker left by a section that was
// SIGKILLed (it never got to remove it) is told apart from a section
// still running: only a live owner is an overlap. SIGTERM (the holder lost
// its lease) makes a section leave cleanly, unless it was asked to ignore
// it.
//
// When the fault injector leaves a stall request, the section that takes
// it stays inside for longer than the TTL while the injector holds all
// traffic: its holder must lose the lease and stop it (SIGTERM, or
// SIGKILL if it ignores that) before anyone else can get in.
const criticalSection = `
set -C
d=$CONTENTION_DIR
if ! { echo $$ > "$d/marker"; } 2>/dev/null; then
	owner=$(cat "$d/marker" 2>/dev/null)
	if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then
		echo "token $DISTLOCK_TOKEN entered while pid $owner was inside" >> "$d/overlaps"
		exit 3
	fi
	echo "token $DISTLOCK_TOKEN found the marker of dead pid $owner" >> "$d/stale"
	rm -f "$d/marker"
	echo $$ > "$d/marker" || exit 4
fi
trap 'rm -f "$d/marker"; exit 143' TERM
echo "$DISTLOCK_TOKEN" >> "$d/log"
if mv "$d/stall" "$d/stall.$$" 2>/dev/null; then
	if [ "$(cat "$d/stall.$$")" = ignore-term ]; then trap '' TERM; fi
	echo "$DISTLOCK_TOKEN" > "$d/stalling.tmp"
	mv "$d/stalling.tmp" "$d/stalling"
	sleep 4
fi
sleep 0.02
rm -f "$d/marker"
`

// buildDistlock builds the binary the contention test runs (not race
// instrumented: the test is about distlock, not about its data races, and
// 16 race-instrumented processes would crowd a small machine).
func buildDistlock(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "distlock")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestContention(t *testing.T) {
	if testing.Short() {
		t.Skip("contention: 16 processes x 25 rounds under faults; skipped with -short")
	}
	bin := buildDistlock(t)
	t.Run("file", func(t *testing.T) {
		runContention(t, bin, "file://"+filepath.Join(t.TempDir(), "locks"), nil, nil)
	})
	// The networked engines' runs, under faults, take about a minute each
	// on two cores: they belong to the full matrix.
	if !fullMatrix() {
		t.Log("the contention runs on the networked engines run with DISTLOCK_TEST_FULL=1 (.ci/run)")
		return
	}
	t.Run("redis-server", func(t *testing.T) {
		p := contentionServer(t, server.StartRedis)
		px := contentionProxy(t, p.Addr())
		runContention(t, bin, "redis://"+px.Addr(), px, contentionDirect(t, "redis://"+p.Addr()))
	})
	t.Run("etcd", func(t *testing.T) {
		p := contentionServer(t, server.StartEtcd)
		px := contentionProxy(t, p.Addr())
		runContention(t, bin, "etcd://"+px.Addr(), px, contentionDirect(t, "etcd://"+p.Addr()))
	})
	t.Run("zookeeper", func(t *testing.T) {
		p := contentionServer(t, server.StartZooKeeper)
		px := contentionProxy(t, p.Addr())
		runContention(t, bin, "zk://"+px.Addr(), px, contentionDirect(t, "zk://"+p.Addr()))
	})
	t.Run("postgres", func(t *testing.T) {
		p := contentionServer(t, server.StartPostgres)
		px := contentionProxy(t, p.Addr())
		url := func(addr string) string {
			return "postgres://" + server.PostgresUser + "@" + addr + "/postgres?sslmode=disable"
		}
		runContention(t, bin, url(px.Addr()), px, contentionDirect(t, url(p.Addr())))
	})
	t.Run("mariadb", func(t *testing.T) {
		p := contentionServer(t, server.StartMariaDB)
		px := contentionProxy(t, p.Addr())
		url := func(addr string) string {
			return "mysql://" + server.MariaDBUser + "@" + addr + "/" + server.MariaDBDatabase
		}
		runContention(t, bin, url(px.Addr()), px, contentionDirect(t, url(p.Addr())))
	})
}

func contentionServer(t *testing.T, start func(dir string) (*server.Process, error)) *server.Process {
	t.Helper()
	p, err := start(t.TempDir())
	if errors.Is(err, server.ErrNoBinary) {
		if requireServers() {
			t.Fatalf("%v, and DISTLOCK_TEST_REQUIRE_SERVERS=1", err)
		}
		t.Skipf("%v: skipped (CI requires it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func contentionProxy(t *testing.T, addr string) *faultproxy.Proxy {
	t.Helper()
	px, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return px
}

// contentionDirect connects to the server itself, not through the proxy.
func contentionDirect(t *testing.T, url string) lock.Backend {
	t.Helper()
	b, err := backend.Open(context.Background(), url, backend.Options{Prefix: "distlock", ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// outcomes counts how the runs of distlock ended.
type outcomes struct {
	ok, lost, busy, unavailable, other atomic.Int64
}

func runContention(t *testing.T, bin, backendURL string, px *faultproxy.Proxy, direct lock.Backend) {
	dir := t.TempDir()
	env := append(os.Environ(),
		"DISTLOCK_BACKEND="+backendURL,
		"CONTENTION_DIR="+dir,
	)
	var (
		out      outcomes
		wg       sync.WaitGroup
		failOnce sync.Once
		failure  string
		deadline = time.Now().Add(contentionDeadline)
	)
	fail := func(format string, args ...any) {
		failOnce.Do(func() { failure = fmt.Sprintf(format, args...) })
	}
	done := make(chan struct{})
	for w := 0; w < contentionProcs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < contentionRounds; {
				if time.Now().After(deadline) {
					fail("worker %d: only %d of %d rounds done within %s", w, round, contentionRounds, contentionDeadline)
					return
				}
				c := exec.Command(bin, "--connect-timeout", "2s", "run", "--key", "contention",
					"--wait", "60s", "--ttl", contentionTTL.String(), "--", "sh", "-c", criticalSection)
				c.Env = env
				var stderr strings.Builder
				c.Stderr = &stderr
				err := c.Run()
				switch code := processExitCode(c, err); code {
				case 0:
					out.ok.Add(1)
					round++
				case 76: // lost while the section ran: allowed, counted
					out.lost.Add(1)
					round++
				case 75: // --wait ran out
					out.busy.Add(1)
				case 69: // the engine was unreachable (a drop) before the section started
					out.unavailable.Add(1)
				default:
					out.other.Add(1)
					fail("worker %d round %d: distlock exited %d: %s", w, round, code, strings.TrimSpace(stderr.String()))
					return
				}
			}
		}()
	}
	var stalled atomic.Int64
	faultsDone := make(chan struct{})
	if px != nil {
		go func() {
			defer close(faultsDone)
			injectFaults(t, px, direct, dir, done, &stalled)
		}()
	} else {
		close(faultsDone)
	}
	wg.Wait()
	close(done)
	<-faultsDone
	if px != nil {
		px.Resume()
		px.Heal()
	}

	if failure != "" {
		t.Error(failure)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("critical sections overlapped:\n%s", b)
	}
	stale, _ := os.ReadFile(filepath.Join(dir, "stale"))
	tokens := checkTokensRise(t, filepath.Join(dir, "log"))
	t.Logf("%d critical sections entered; distlock runs: %d ok, %d lost the lock (exit 76), %d busy after --wait (75), %d engine unreachable (69)",
		tokens, out.ok.Load(), out.lost.Load(), out.busy.Load(), out.unavailable.Load())
	if len(stale) > 0 {
		// A section SIGKILLed before it could remove its marker: not an
		// overlap (its owner was dead), but worth seeing.
		t.Logf("markers left by killed sections:\n%s", stale)
	}
	if want := int64(contentionProcs * contentionRounds); failure == "" && out.ok.Load()+out.lost.Load() != want {
		t.Errorf("%d rounds done, want %d", out.ok.Load()+out.lost.Load(), want)
	}
	// Every holder held inside its section through a pause longer than
	// the TTL must have lost the lock.
	if out.lost.Load() < stalled.Load() {
		t.Errorf("%d holders were inside through a pause longer than the ttl, but only %d runs lost the lock", stalled.Load(), out.lost.Load())
	}
}

// faultPlan is what injectFaults does, in this order, with a short gap
// before each fault: pauses longer than the TTL with a holder inside
// (half of them in a section that ignores SIGTERM), pauses shorter than
// ttl/3, and drops. A fixed plan keeps the run's length bounded.
var faultPlan = func() []string {
	var plan []string
	for i := 0; i < 6; i++ {
		long := "long-leave-on-term"
		if i%2 == 1 {
			long = "long-ignore-term"
		}
		plan = append(plan, long, "short", "drop", "short")
	}
	return plan
}()

// injectFaults pauses (briefly, or for longer than the TTL) and drops the
// traffic between the distlock processes and the engine, per faultPlan,
// until the plan or the run is done. A long pause is held while a holder
// is inside its critical section (see criticalSection), and only until
// the server itself (asked directly) has let that holder's lease go: the
// waiters then get their first chance at the lock, so a child that
// outlived its lease would meet the next holder in the critical section.
// stalled counts those pauses.
func injectFaults(t *testing.T, px *faultproxy.Proxy, direct lock.Backend, dir string, done <-chan struct{}, stalled *atomic.Int64) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	var short, drops int
	var held []time.Duration
	defer func() {
		t.Logf("faults (seed %d): %d short pauses (< ttl/3), %d drops, %d pauses with a holder inside until the server let its lease go (after %v)", seed, short, drops, len(held), held)
	}()
	sleep := func(d time.Duration) bool {
		select {
		case <-done:
			return false
		case <-time.After(d):
			return true
		}
	}
	stall, stalling := filepath.Join(dir, "stall"), filepath.Join(dir, "stalling")
	for _, fault := range faultPlan {
		if !sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond) {
			return
		}
		switch fault {
		case "short": // shorter than ttl/3: renewal must ride it out
			short++
			px.Pause()
			sleep(time.Duration(150+rng.IntN(400)) * time.Millisecond)
			px.Resume()
		case "drop": // resets, and refused reconnections for a moment
			drops++
			px.Drop()
			sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
			px.Heal()
		default: // longer than the TTL, with a holder inside: it must lose
			mode := strings.TrimPrefix(fault, "long-")
			os.Remove(stalling)
			if err := os.WriteFile(stall, []byte(mode), 0o644); err != nil {
				t.Error(err)
				return
			}
			var tok uint64
			for {
				if b, err := os.ReadFile(stalling); err == nil {
					if tok, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
						t.Errorf("stalling: %v", err)
						return
					}
					break
				}
				if !sleep(5 * time.Millisecond) {
					os.Remove(stall)
					return
				}
			}
			stalled.Add(1)
			paused := time.Now()
			px.Pause()
			for ctx := context.Background(); time.Since(paused) < 3*contentionTTL; time.Sleep(5 * time.Millisecond) {
				if h, ok, err := direct.Inspect(ctx, "contention"); err == nil && (!ok || h.Token != tok) {
					break
				}
			}
			held = append(held, time.Since(paused).Round(10*time.Millisecond))
			px.Resume()
		}
	}
}

// checkTokensRise checks that the tokens in the log rise strictly, line
// by line, and returns how many there are.
func checkTokensRise(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no critical section ran: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var last uint64
	n := 0
	for sc.Scan() {
		n++
		tok, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			t.Errorf("log line %d is not a token: %q", n, sc.Text())
			continue
		}
		if n > 1 && tok <= last {
			t.Errorf("log line %d: token %d is not greater than %d before it", n, tok, last)
		}
		last = tok
	}
	return n
}

func processExitCode(c *exec.Cmd, err error) int {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return c.ProcessState.ExitCode()
}
