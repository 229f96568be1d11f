package etcd

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/testenv/embedetcd"
)

// A test server: the embedded etcd (always) and the real etcd binary (when
// on PATH; required when DISTLOCK_TEST_REQUIRE_SERVERS=1). Each is started
// once for the package; tests isolate themselves with their own prefix.
type server struct {
	name     string
	endpoint string      // host:port
	proc     *os.Process // the etcd binary's process; nil when embedded
}

var (
	servers     []server
	stopServers []func()
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		defer func() {
			for _, stop := range stopServers {
				stop()
			}
		}()
		dir, err := os.MkdirTemp("", "distlock-etcd-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)

		t0 := time.Now()
		ep, stop, err := embedetcd.Start(dir + "/embedded")
		if err != nil {
			fmt.Fprintln(os.Stderr, "embedded etcd:", err)
			return 1
		}
		if testing.Verbose() {
			fmt.Printf("embedded etcd ready at %s in %s\n", ep, time.Since(t0).Round(time.Millisecond))
		}
		servers = append(servers, server{"embedded", ep, nil})
		stopServers = append(stopServers, stop)

		bin, err := exec.LookPath("etcd")
		switch {
		case err == nil:
			t0 = time.Now()
			ep, proc, stop, err := startBinary(bin, dir+"/binary")
			if err != nil {
				fmt.Fprintln(os.Stderr, "etcd binary:", err)
				return 1
			}
			if testing.Verbose() {
				fmt.Printf("etcd binary %s ready at %s in %s\n", bin, ep, time.Since(t0).Round(time.Millisecond))
			}
			servers = append(servers, server{"binary", ep, proc})
			stopServers = append(stopServers, stop)
		case os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1":
			fmt.Fprintln(os.Stderr, "etcd binary not on PATH and DISTLOCK_TEST_REQUIRE_SERVERS=1")
			return 1
		default:
			fmt.Println("etcd binary not on PATH: testing against the embedded server only")
		}
		return m.Run()
	}()
	os.Exit(code)
}

// startBinary runs the etcd binary as a single member on free loopback
// ports with small election timeouts (so 1 s leases are really 1 s).
func startBinary(bin, dir string) (endpoint string, proc *os.Process, stop func(), err error) {
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return "", nil, nil, err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		os.RemoveAll(dir)
		var logs bytes.Buffer
		cmd := exec.Command(bin,
			"--name", "t",
			"--data-dir", dir,
			"--listen-client-urls", client,
			"--advertise-client-urls", client,
			"--listen-peer-urls", peer,
			"--initial-advertise-peer-urls", peer,
			"--initial-cluster", "t="+peer,
			"--heartbeat-interval", "10",
			"--election-timeout", "50",
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "error",
		)
		cmd.Stdout = &logs
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			return "", nil, nil, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cmd.Process.Signal(syscall.SIGCONT) // in case a test left it stopped
				cmd.Process.Signal(os.Interrupt)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
			})
		}
		ep := fmt.Sprintf("127.0.0.1:%d", ports[0])
		if err := waitReady(ep, exited, 10*time.Second); err != nil {
			stop()
			if strings.Contains(logs.String(), "address already in use") {
				continue // lost the port race; pick others
			}
			return "", nil, nil, fmt.Errorf("%v; logs:\n%s", err, logs.String())
		}
		return ep, cmd.Process, stop, nil
	}
	return "", nil, nil, fmt.Errorf("could not find free ports for etcd")
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitReady polls (this is start-up, not an assertion) until a
// linearizable read succeeds.
func waitReady(ep string, exited <-chan struct{}, timeout time.Duration) error {
	// First wait for the port, so the client's first connection attempt
	// succeeds (a failed one backs off for a second).
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", ep, 100*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("etcd exited while starting")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not listening after %s: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + ep}, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := cli.Get(ctx, "ready")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("etcd exited while starting")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not ready after %s: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eachServer runs f as a subtest against every server, the servers in
// parallel (each server sees one test at a time).
func eachServer(t *testing.T, f func(t *testing.T, s server)) {
	t.Helper()
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			f(t, s)
		})
	}
}

// prefixes counts test prefixes so every (sub)test has its own namespace.
var (
	prefixMu sync.Mutex
	prefixN  int
)

func testPrefix(t *testing.T) string {
	prefixMu.Lock()
	defer prefixMu.Unlock()
	prefixN++
	return fmt.Sprintf("test/%d", prefixN)
}

// newBackend opens a Backend on s with a fresh prefix; closed at cleanup.
func newBackend(t *testing.T, s server) *Backend {
	t.Helper()
	return newBackendPrefix(t, s, testPrefix(t))
}

func newBackendPrefix(t *testing.T, s server, prefix string) *Backend {
	t.Helper()
	cfg, err := ParseURL("etcd://" + s.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = prefix
	cfg.DialTimeout = 5 * time.Second
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// rawClient is a plain etcd client for looking behind the backend's back.
func rawClient(t *testing.T, s server) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"http://" + s.endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits for cond with a deadline (no sleep-as-assertion).
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
