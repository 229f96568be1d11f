package server

import (
	"path/filepath"
	"strconv"
)

// RedisMasters are independent redis-servers (no replication between
// them), as Redlock uses them.
type RedisMasters struct {
	Nodes []*Process
}

// StartRedisMasters starts n redis-servers, each as StartRedis does, in
// dir/node<i>.
func StartRedisMasters(dir string, n int) (m *RedisMasters, err error) {
	m = &RedisMasters{}
	for i := range n {
		p, err := startRedis(filepath.Join(dir, "node"+strconv.Itoa(i)), "redis-server", nil)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.Nodes = append(m.Nodes, p)
	}
	return m, nil
}

// URL is the redlock:// URL of the masters.
func (m *RedisMasters) URL() string { return "redlock://" + addrList(m.Nodes) }

// Close stops every node.
func (m *RedisMasters) Close() error { return closeAll(m.Nodes) }
