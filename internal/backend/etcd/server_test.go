package etcd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	testserver "github.com/distlock/distlock/internal/testenv/server"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/distlock/distlock/internal/testenv/embedetcd"
)

// A test server: the embedded etcd (always) and the real etcd binary (when
// on PATH; required when DISTLOCK_TEST_REQUIRE_SERVERS=1). Each is started
// once for the package; tests isolate themselves with their own prefix.
type server struct {
	name     string
	endpoint string              // host:port
	proc     *testserver.Process // the etcd binary; nil when embedded
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
			proc, err := testserver.StartEtcd(dir + "/binary")
			if err != nil {
				fmt.Fprintln(os.Stderr, "etcd binary:", err)
				return 1
			}
			if testing.Verbose() {
				fmt.Printf("etcd binary %s ready at %s in %s\n", bin, proc.Addr(), time.Since(t0).Round(time.Millisecond))
			}
			servers = append(servers, server{"binary", proc.Addr(), proc})
			stopServers = append(stopServers, func() { proc.Close() })
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

func newBackendPrefix(t *testing.T, s server, prefix string, opts ...grpc.DialOption) *Backend {
	t.Helper()
	cfg, err := ParseURL("etcd://" + s.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = prefix
	cfg.DialTimeout = 5 * time.Second
	cfg.dialOptions = opts
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
