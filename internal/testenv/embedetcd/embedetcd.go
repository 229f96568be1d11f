// Package embedetcd starts a single-member etcd server inside the test
// process (go.etcd.io/etcd/server/v3/embed), so that `go test ./...` can
// exercise the etcd engine on a machine with nothing but Go.
package embedetcd

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"
)

// startTimeout bounds how long Start waits for the member to become ready.
const startTimeout = 20 * time.Second

// Start runs an embedded etcd with its data in dir (which must be empty or
// hold a previous run of the same member), listening on free loopback ports
// for clients and peers. It returns the client endpoint as "host:port"
// (usable in an etcd:// URL) and a stop function.
//
// Logs are silenced (nop zap logger). TickMs/ElectionMs are small so the
// single member elects itself in a few tens of milliseconds; a side effect
// is that the server's minimum lease TTL is 1 s (it is 3/2 election
// timeouts, rounded up to whole seconds), so tests may use 1 s TTLs.
//
// stop closes the server exactly once (embed.Etcd.Close panics when called
// twice); it is safe to call stop several times and from several
// goroutines. Close clients that talk to the server before calling stop, or
// Close waits for their streams to time out.
func Start(dir string) (endpoint string, stop func(), err error) {
	cfg := embed.NewConfig()
	cfg.Name = "embedetcd"
	cfg.Dir = dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.TickMs = 10
	cfg.ElectionMs = 50
	cfg.EnableGRPCGateway = false
	cfg.UnsafeNoFsync = true // test data only; saves fsyncs on every write
	cfg.Metrics = "basic"
	cfg.BcryptCost = uint(bcrypt.MinCost) // auth tests: ~1 ms per password check, not ~1 s under -race

	// Port 0: the kernel picks free ports when the listeners are opened, so
	// there is no window in which another process could take them. The
	// member's advertised peer URL keeps port 0, which a single-member
	// cluster never dials.
	lc := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	lp := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{lc}
	cfg.AdvertiseClientUrls = []url.URL{lc}
	cfg.ListenPeerUrls = []url.URL{lp}
	cfg.AdvertisePeerUrls = []url.URL{lp}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("embedetcd: start: %w", err)
	}
	var once sync.Once
	stop = func() { once.Do(e.Close) }

	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		stop()
		return "", nil, fmt.Errorf("embedetcd: server failed while starting: %w", err)
	case <-time.After(startTimeout):
		stop()
		return "", nil, fmt.Errorf("embedetcd: server not ready after %s", startTimeout)
	}
	if len(e.Clients) == 0 {
		stop()
		return "", nil, fmt.Errorf("embedetcd: server has no client listener")
	}
	addr, ok := e.Clients[0].Addr().(*net.TCPAddr)
	if !ok {
		stop()
		return "", nil, fmt.Errorf("embedetcd: unexpected client listener address %v", e.Clients[0].Addr())
	}
	return addr.String(), stop, nil
}
