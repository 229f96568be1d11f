package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
)

// EtcdCluster is n etcd members of one cluster on loopback, each its own
// Process (Stop, Kill, Restart with its data work per member).
type EtcdCluster struct {
	Members []*Process
}

// StartEtcdCluster starts n etcd members, each with its data in
// dir/member<i>, and returns once every member reports healthy and knows
// all n. Unlike StartEtcd it does not retry on other ports: a member that
// loses its port race fails the start.
func StartEtcdCluster(dir string, n int) (*EtcdCluster, error) {
	bin, dir, err := binAndDir("etcd", dir)
	if err != nil {
		return nil, err
	}
	members, err := startGroup(n, 2, startTimeout, func(i int, ports []int) (spec, error) {
		var initial []string
		for j := range n {
			initial = append(initial, etcdMemberName(ports[2*j+1])+"=http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*j+1])))
		}
		mdir, err := prepareDir(filepath.Join(dir, "member"+strconv.Itoa(i)))
		if err != nil {
			return spec{}, err
		}
		return etcdMemberSpec(bin, mdir, ports[2*i], ports[2*i+1], strings.Join(initial, ","), n, etcdClustered), nil
	}) // they elect a leader only once a quorum runs
	if err != nil {
		return nil, err
	}
	return &EtcdCluster{Members: members}, nil
}

func etcdMemberName(peerPort int) string { return "distlock-test-" + strconv.Itoa(peerPort) }

// etcdTuning is what differs between a single member and a cluster's.
type etcdTuning struct {
	token, heartbeat, election string // --initial-cluster-token, ms, ms
}

// etcdClustered is loose enough for a loaded 2-core machine, quick enough
// for tests.
var etcdClustered = etcdTuning{token: "distlock-test-cluster", heartbeat: "50", election: "500"}

// etcdMemberSpec runs member etcdMemberName(peerPort) of a cluster of n
// (initial: its --initial-cluster), with its data in dir/etcd.data.
func etcdMemberSpec(bin, dir string, clientPort, peerPort int, initial string, n int, t etcdTuning) spec {
	client := net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))
	peerURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))
	name := etcdMemberName(peerPort)
	return spec{
		name: "etcd member " + name,
		bin:  bin,
		dir:  dir,
		args: []string{
			"--name", name,
			"--data-dir", filepath.Join(dir, "etcd.data"),
			"--listen-client-urls", "http://" + client,
			"--advertise-client-urls", "http://" + client,
			"--listen-peer-urls", peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", initial,
			"--initial-cluster-state", "new",
			"--initial-cluster-token", t.token,
			"--heartbeat-interval", t.heartbeat,
			"--election-timeout", t.election,
			"--logger", "zap",
			"--log-outputs", "stderr",
		},
		env:     etcdEnv(),
		logPath: filepath.Join(dir, "etcd.log"),
		addr:    client,
		probe: func(ctx context.Context, _ int) error {
			return etcdMemberAnswers(ctx, client, name, n)
		},
	}
}

// etcdMemberAnswers reports nil when GET /health says {"health":"true"},
// which etcd only does once it has a leader and can serve requests, and the
// member list has n members, one of them name (the member answering: only
// it can have that name).
func etcdMemberAnswers(ctx context.Context, addr, name string, n int) error {
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
	found := false
	for _, m := range list.Members {
		found = found || m.Name == name
	}
	if len(list.Members) != n || !found {
		return fmt.Errorf("the server on %s is not member %s of %d: %+v", addr, name, n, list.Members)
	}
	return nil
}

// Endpoints is the members' client addresses, comma-separated.
func (c *EtcdCluster) Endpoints() string { return addrList(c.Members) }

// URL is the etcd:// backend URL naming every member.
func (c *EtcdCluster) URL() string { return "etcd://" + c.Endpoints() }

// Processes is every member.
func (c *EtcdCluster) Processes() []*Process { return c.Members }

// Leader is the member the first member that answers names as leader.
func (c *EtcdCluster) Leader(ctx context.Context) (*Process, error) {
	type status struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	ids := map[string]*Process{}
	leader := ""
	for _, p := range c.Members {
		var st status
		if err := etcdCall(ctx, http.MethodPost, p.Addr(), "/v3/maintenance/status", &st); err != nil {
			continue
		}
		ids[st.Header.MemberID] = p
		if st.Leader != "" && st.Leader != "0" {
			leader = st.Leader
		}
	}
	if p := ids[leader]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("no member answers as leader %q", leader)
}

// Close stops every member.
func (c *EtcdCluster) Close() error { return closeAll(c.Members) }
