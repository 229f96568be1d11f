package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// quiet is how long a stopped server must stay silent. A slow machine
	// can only make such a check pass wrongly, never fail wrongly.
	quiet = 300 * time.Millisecond
	// patience bounds every wait for something that must happen.
	patience = 20 * time.Second
)

// started skips the test when the binary is missing, unless
// DISTLOCK_TEST_REQUIRE_SERVERS=1, and closes p when the test ends.
func started(t *testing.T, p *Process, err error) *Process {
	t.Helper()
	if errors.Is(err, ErrNoBinary) {
		if os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatalf("DISTLOCK_TEST_REQUIRE_SERVERS=1 but: %v", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// waitRefused waits until nothing listens on addr any more.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
		if err == nil {
			_ = c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepts connections (last dial error: %v)", addr, err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not an assertion
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	oldLib, oldSbin := postgresLibDir, sbinDirs
	postgresLibDir, sbinDirs = t.TempDir(), []string{t.TempDir()}
	t.Cleanup(func() { postgresLibDir, sbinDirs = oldLib, oldSbin })
	for name, start := range map[string]func(string) (*Process, error){
		"redis":     StartRedis,
		"etcd":      StartEtcd,
		"zookeeper": StartZooKeeper,
		"postgres":  StartPostgres,
		"mariadb":   StartMariaDB,
	} {
		p, err := start(t.TempDir())
		if !errors.Is(err, ErrNoBinary) {
			if p != nil {
				_ = p.Close()
			}
			t.Errorf("%s: err = %v, want ErrNoBinary", name, err)
		}
	}
}

// The helper process starts a server, reports its address and then waits to
// be killed; see TestServerDiesWithTestProcess.
const (
	helperEnv    = "DISTLOCK_TESTENV_SERVER_HELPER"
	helperDirEnv = "DISTLOCK_TESTENV_SERVER_HELPER_DIR"
)

func TestHelperProcess(t *testing.T) {
	kind := os.Getenv(helperEnv)
	if kind == "" {
		t.Skip("helper for TestServerDiesWithTestProcess")
	}
	start := map[string]func(string) (*Process, error){
		"redis": StartRedis, "etcd": StartEtcd, "postgres": StartPostgres,
	}[kind]
	// Start from a goroutine that exits at once, so the server's forking
	// thread is not the main thread and the goroutine is long gone.
	type result struct {
		p   *Process
		err error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := start(os.Getenv(helperDirEnv))
		ch <- result{p, err}
	}()
	r := <-ch
	if r.err != nil {
		fmt.Println("error", r.err)
		os.Exit(3)
	}
	fmt.Println("addr", r.p.Addr())
	select {} // until killed
}

func TestServerDiesWithTestProcess(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		if _, err := lookBinary("redis-server"); err != nil {
			started(t, nil, err)
		}
		addr, kill := startInHelper(t, "redis", t.TempDir())
		if err := redisAnswers(t.Context(), addr, 0); err != nil {
			t.Fatalf("helper's redis does not answer: %v", err)
		}
		kill()
		waitRefused(t, addr)
	})
	// PostgreSQL runs as another user when the tests run as root: the
	// kernel's parent-death signal must still reach it.
	t.Run("postgres", func(t *testing.T) {
		if _, _, err := lookPostgres(); err != nil {
			started(t, nil, err)
		}
		dir := t.TempDir()
		addr, kill := startInHelper(t, "postgres", dir)
		c := pgConnect(t, addr)
		if _, err := pgQuery(c, patience, "SELECT 'alive'"); err != nil {
			t.Fatalf("helper's postgres does not answer: %v", err)
		}
		kill()
		waitRefused(t, addr)
		// Nobody closed it: remove its private data directory ourselves.
		if data, err := os.Readlink(filepath.Join(dir, "postgres.data")); err == nil {
			_ = os.RemoveAll(filepath.Dir(data))
		}
	})
}

// startInHelper starts a server of kind in dir in a helper process, and
// returns its address and a function that SIGKILLs the helper.
func startInHelper(t *testing.T, kind, dir string) (addr string, kill func()) {
	t.Helper()
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v=false")
	helper.Env = append(os.Environ(), helperEnv+"="+kind, helperDirEnv+"="+dir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	kill = func() {
		t.Helper()
		if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = helper.Wait()
	}

	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "addr ")
		if !ok {
			t.Fatalf("helper said %q", line)
		}
		return addr, kill
	case <-time.After(patience):
		t.Fatal("helper did not report an address")
	}
	return "", nil
}
