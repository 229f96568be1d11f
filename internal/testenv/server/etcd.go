package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StartEtcd starts a single-member etcd on free loopback client and peer
// ports, with its data in dir/etcd.data and its log in dir/etcd.log (dir is
// created if needed), and waits until GET /health reports healthy. Use a
// separate dir per server. It returns an error wrapping ErrNoBinary when
// etcd is not on PATH.
func StartEtcd(dir string) (*Process, error) {
	bin, err := lookBinary("etcd")
	if err != nil {
		return nil, err
	}
	if dir, err = prepareDir(dir); err != nil {
		return nil, err
	}
	return startFresh(func() (spec, error) {
		ports, err := freePorts(2)
		if err != nil {
			return spec{}, err
		}
		client := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		peerURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
		clientURL := "http://" + client
		// Only this member can have this name: no other can bind its peer port.
		name := "distlock-test-" + strconv.Itoa(ports[1])
		return spec{
			name: "etcd",
			bin:  bin,
			dir:  dir,
			args: []string{
				"--name", name,
				"--data-dir", filepath.Join(dir, "etcd.data"),
				"--listen-client-urls", clientURL,
				"--advertise-client-urls", clientURL,
				"--listen-peer-urls", peerURL,
				"--initial-advertise-peer-urls", peerURL,
				"--initial-cluster", name + "=" + peerURL,
				"--initial-cluster-state", "new",
				"--initial-cluster-token", "distlock-test",
				// A single member elects itself after one election timeout.
				"--heartbeat-interval", "10",
				"--election-timeout", "100",
				"--logger", "zap",
				"--log-outputs", "stderr",
			},
			env:     etcdEnv(),
			logPath: filepath.Join(dir, "etcd.log"),
			addr:    client,
			probe: func(ctx context.Context, _ int) error {
				return etcdAnswers(ctx, client, name)
			},
		}, nil
	})
}

// etcdEnv is the test's environment without ETCD_* variables: etcd reads
// its flags from them too and refuses to start when one conflicts with a
// command-line flag.
func etcdEnv() []string { return envWithout("ETCD_") }

// envWithout is the test's environment without the variables whose names
// start with prefix.
func envWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// probeClient never keeps idle connections, so probing leaves no goroutines
// behind, and never goes through an HTTP proxy.
var probeClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// etcdAnswers reports nil when GET /health says {"health":"true"}, which
// etcd only does once it has a leader and can serve requests, and the
// member answering is the one called name.
func etcdAnswers(ctx context.Context, addr, name string) error {
	var health struct {
		Health string `json:"health"`
	}
	if err := etcdCall(ctx, http.MethodGet, addr, "/health", &health); err != nil {
		return err
	}
	if health.Health != "true" {
		return fmt.Errorf("GET /health: health %q", health.Health)
	}
	var list struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if err := etcdCall(ctx, http.MethodPost, addr, "/v3/cluster/member/list", &list); err != nil {
		return err
	}
	if len(list.Members) != 1 || list.Members[0].Name != name {
		return fmt.Errorf("the server on %s is not etcd member %s: %+v", addr, name, list.Members)
	}
	return nil
}

// etcdCall sends an empty JSON request and decodes a 200 response into v.
func etcdCall(ctx context.Context, method, addr, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}
