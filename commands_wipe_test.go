package main

import (
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// wipe: the engine loses all its data, as a rebuilt cluster or a wiped
// server does: the real server is killed, its data directory emptied, and
// it is started again, empty, on the same address (etcd, ZooKeeper; the
// data directories are where engines_test.go starts them; Consul's dev
// agent keeps none).
func cmdWipe(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if neg || len(args) != 0 || st.server == nil {
		ts.Fatalf("usage: [real] wipe (etcd, zookeeper, consul)")
	}
	var data string
	switch st.engine.kind {
	case "consul": // a dev agent keeps its data in memory: a restart empties it
		ts.Check(st.server.Kill())
		ts.Check(st.server.Restart())
		return
	case "etcd":
		data = filepath.Join(ts.Getenv("WORK"), ".etcd", "etcd.data")
	case "zookeeper":
		data = filepath.Join(ts.Getenv("WORK"), ".zookeeper", "zk.data")
	default:
		ts.Fatalf("wipe: only etcd, zookeeper and consul")
	}
	ts.Check(st.server.Kill())
	entries, err := os.ReadDir(data)
	ts.Check(err)
	for _, e := range entries {
		ts.Check(os.RemoveAll(filepath.Join(data, e.Name())))
	}
	ts.Check(st.server.Restart())
}
