package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// command is one start-up measurement.
type command struct {
	name string
	argv []string
}

// peers is each engine's peer in the start-up table.
var peers = map[string]string{"file": "flock f true", "redis": "redis-cli SET NX PX + DEL", "etcd": "etcdctl lock"}

// startup times every command once per round, interleaved round by round
// (round 0 warms up and is dropped), and fills res's start-up figures.
func startup(res *Results, tmp string, rounds int, bins []binary, engines []engine, redisAddr, etcdAddr string, note func(string, ...any)) ([]command, error) {
	var cmds []command
	for _, b := range bins {
		cmds = append(cmds, command{b.name("distlock version"), []string{b.path, "version"}})
	}
	cmds = append(cmds, command{"true", []string{"true"}})
	if p, err := exec.LookPath("flock"); err == nil {
		cmds = append(cmds, command{"flock f true", []string{p, filepath.Join(tmp, "flock-startup"), "true"}})
	} else {
		note("flock not on PATH: no file peer")
	}
	for _, e := range engines {
		for _, b := range bins {
			cmds = append(cmds, command{b.name("distlock run " + e.name), []string{b.path, "--backend", e.url, "run", "--key", "startup", "--", "true"}})
		}
	}
	if p, err := exec.LookPath("etcdctl"); err == nil && etcdAddr != "" {
		cmds = append(cmds, command{"etcdctl lock", []string{p, "--endpoints=" + etcdAddr, "lock", "startup", "true"}})
	} else if etcdAddr != "" {
		note("etcdctl not on PATH: no etcd peer")
	}
	if p, err := exec.LookPath("redis-cli"); err == nil && redisAddr != "" {
		host, port, _ := strings.Cut(redisAddr, ":")
		script := fmt.Sprintf("%[1]s -h %[2]s -p %[3]s SET startup x NX PX 30000 >/dev/null && %[1]s -h %[2]s -p %[3]s DEL startup >/dev/null", p, host, port)
		cmds = append(cmds, command{"redis-cli SET NX PX + DEL", []string{"sh", "-c", script}})
	} else if redisAddr != "" {
		note("redis-cli not on PATH: no redis peer")
	}
	times := map[string][]time.Duration{}
	for r := range rounds + 1 { // round 0 warms up
		for _, c := range cmds {
			t0 := time.Now()
			out, err := exec.Command(c.argv[0], c.argv[1:]...).CombinedOutput()
			d := time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("%s: %v: %s", c.name, err, out)
			}
			if r > 0 {
				times[c.name] = append(times[c.name], d)
			}
		}
	}
	for name, ds := range times {
		res.Startup[name] = stat(ds)
	}
	for _, b := range bins {
		floor := res.Startup[b.name("distlock version")].Median + res.Startup["true"].Median
		for _, e := range engines {
			ours := res.Startup[b.name("distlock run "+e.name)].Median
			res.Overhead[b.name(e.name)] = round2(ours - floor)
			if peer, ok := res.Startup[peers[e.name]]; ok {
				res.Ratios[b.name(e.name+" / "+peers[e.name])] = round2(ours / peer.Median)
			}
		}
	}
	return cmds, nil
}
