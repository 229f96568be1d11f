package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Consul is not packaged for this machine's distribution; the harness
// builds the agent from the Go module proxy, from the pinned wrapper module
// internal/testenv/consulserver (its go.mod says why it is a module of its
// own), once per version of that module, into the user's cache directory:
//
//	<os.UserCacheDir()>/distlock-consul/<hash of the wrapper's go.mod and go.sum>/consul
//
// DISTLOCK_CONSUL_BIN names a consul binary to use instead.

// consulBuildEnv, set to 1, lets the harness build the agent when it is
// not in the cache yet (about 11 minutes of CPU); DISTLOCK_TEST_REQUIRE_SERVERS=1
// (CI) does too. Otherwise a missing agent skips the Consul rows, so that a
// plain `go test ./...` never starts an 11-minute build by surprise.
const consulBuildEnv = "DISTLOCK_TEST_BUILD_CONSUL"

// consulModuleDir is the wrapper module's directory, next to this package.
func consulModuleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "consulserver")
}

// ConsulBinaryPath is where the harness keeps (or would keep) the agent
// built from the wrapper module as it is now.
func ConsulBinaryPath() (string, error) {
	if p := os.Getenv("DISTLOCK_CONSUL_BIN"); p != "" {
		return p, nil
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(consulModuleDir(), f))
		if err != nil {
			return "", fmt.Errorf("consul wrapper module: %w", err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "distlock-consul", hex.EncodeToString(h.Sum(nil))[:16], "consul"), nil
}

// consulBinary returns the agent's path, building it first when it is
// missing and building is allowed (consulBuildEnv, or CI's
// DISTLOCK_TEST_REQUIRE_SERVERS=1); else an error wrapping ErrNoBinary.
func consulBinary() (string, error) {
	path, err := ConsulBinaryPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if os.Getenv(consulBuildEnv) != "1" && os.Getenv("DISTLOCK_TEST_REQUIRE_SERVERS") != "1" {
		return "", fmt.Errorf("%w: consul (not built yet: set %s=1 to build it once from internal/testenv/consulserver, about 11 CPU-minutes)", ErrNoBinary, consulBuildEnv)
	}
	return path, BuildConsul(path)
}

// BuildConsul builds the agent from the wrapper module into path, unless
// another process did it meanwhile: builders take turns under a flock on
// path's directory, and the binary appears by rename, whole.
func BuildConsul(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		return nil // built while we waited for our turn
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: go (to build consul)", ErrNoBinary)
	}
	tmp := path + ".tmp"
	cmd := exec.Command(goBin, "build", "-o", tmp, "github.com/hashicorp/consul")
	cmd.Dir = consulModuleDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building consul in %s: %v\n%s", cmd.Dir, err, out)
	}
	fmt.Fprintf(os.Stderr, "built consul into %s in %s\n", path, time.Since(start).Round(time.Second))
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}
