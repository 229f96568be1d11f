package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// StartEtcd starts a single-member etcd on free loopback client and peer
// ports, with its data in dir/etcd.data and its log in dir/etcd.log (dir is
// created if needed), and waits until GET /health reports healthy. Use a
// separate dir per server. It returns an error wrapping ErrNoBinary when
// etcd is not on PATH.
func StartEtcd(dir string) (*Process, error) {
	bin, dir, err := binAndDir("etcd", dir)
	if err != nil {
		return nil, err
	}
	return startFresh(2, nil, func(ports []int) (spec, error) {
		// Only this member can have this name: no other can bind its peer port.
		name := etcdMemberName(ports[1])
		initial := name + "=http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
		s := etcdMemberSpec(bin, dir, ports[0], ports[1], initial, 1, etcdSingle)
		s.name = "etcd"
		return s, nil
	})
}

// etcdSingle is a single member's tuning: it elects itself after one
// election timeout.
var etcdSingle = etcdTuning{token: "distlock-test", heartbeat: "10", election: "100"}

// etcdEnv is the test's environment without ETCD_* variables: etcd reads
// its flags from them too and refuses to start when one conflicts with a
// command-line flag.
func etcdEnv() []string { return envWithout("ETCD_") }

// probeClient never keeps idle connections, so probing leaves no goroutines
// behind, and never goes through an HTTP proxy.
var probeClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
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
