package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// ConsulSessionTTLMin is the test servers' session_ttl_min: Consul's
// default (10 s) would refuse the scenarios' 1–3 s leases.
const ConsulSessionTTLMin = time.Second

// StartConsul starts `consul agent -dev` (one server, its data in memory)
// on free loopback ports, with its log in dir/consul.log, and waits until
// it has elected itself leader. Restart brings it back empty, like an
// emptied cluster. It returns an error wrapping ErrNoBinary when the agent
// is not built (see consulBinary).
func StartConsul(dir string) (*Process, error) {
	bin, err := consulBinary()
	if err != nil {
		return nil, err
	}
	if dir, err = prepareDir(dir); err != nil {
		return nil, err
	}
	return startFresh(3, nil, func(ports []int) (spec, error) {
		return consulSpec(bin, dir, "consul", ports, []string{"-dev"}), nil
	})
}

// consulSpec runs an agent whose HTTP, Serf LAN and server RPC ports are
// ports[0], ports[1] and ports[2], all on loopback, with DNS, gRPC and the
// WAN pool off; extra adds the agent's role (-dev, or -server and its
// data directory).
func consulSpec(bin, dir, name string, ports []int, extra []string) spec {
	node := "distlock-test-" + strconv.Itoa(ports[0])
	http := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	args := append(append([]string{"agent"}, extra...),
		"-node", node,
		"-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-http-port", strconv.Itoa(ports[0]),
		"-serf-lan-port", strconv.Itoa(ports[1]),
		"-server-port", strconv.Itoa(ports[2]),
		"-serf-wan-port", "-1", "-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1",
		"-hcl", fmt.Sprintf("session_ttl_min = %q", ConsulSessionTTLMin),
		// Dev mode's quick Raft timing for the servers of a cluster too.
		"-hcl", "performance { raft_multiplier = 1 }",
		// No call home for a new version: the test machine has no way out.
		"-hcl", "disable_update_check = true",
		"-log-level", "warn",
	)
	return spec{
		name:    name,
		bin:     bin,
		dir:     dir,
		args:    args,
		env:     consulEnv(),
		logPath: filepath.Join(dir, name+".log"),
		addr:    http,
		probe: func(ctx context.Context, _ int) error {
			return consulAnswers(ctx, http, node)
		},
	}
}

// consulEnv is the test's environment without CONSUL_* variables, which
// the agent would read (CONSUL_HTTP_TOKEN, CONSUL_HTTP_ADDR, ...).
func consulEnv() []string { return envWithout("CONSUL_") }

// consulAnswers reports nil once the agent on addr is node, its cluster
// has a leader and the node is in the catalog.
func consulAnswers(ctx context.Context, addr, node string) error {
	var self struct {
		Config struct{ NodeName string }
	}
	if err := consulGet(ctx, addr, "/v1/agent/self", &self); err != nil {
		return err
	}
	if self.Config.NodeName != node {
		return fmt.Errorf("the agent on %s is %q, not %s", addr, self.Config.NodeName, node)
	}
	var leader string
	if err := consulGet(ctx, addr, "/v1/status/leader", &leader); err != nil {
		return err
	}
	if leader == "" {
		return fmt.Errorf("consul on %s: no leader yet", addr)
	}
	// Sessions are made on the agent's node: until the leader has put it
	// in the catalog, creating one fails ("Missing node registration").
	var reg struct{ Node *struct{ Node string } }
	if err := consulGet(ctx, addr, "/v1/catalog/node/"+node, &reg); err != nil {
		return err
	}
	if reg.Node == nil {
		return fmt.Errorf("consul on %s: node %s not registered yet", addr, node)
	}
	return nil
}

// consulGet decodes a 200 answer to GET path.
func consulGet(ctx context.Context, addr, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
