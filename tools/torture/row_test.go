package main

import (
	"testing"
	"time"
)

// The row behind the open consul3 pause-server semaphore verdict: the
// servers resumed 4.5 s before the workload stopped and no section started
// in between, the holder inside the pause having died in it. Consul gives
// its session 2×TTL from the new leader's election on (hashicorp/consul#524):
// no failure there. With the failover's time gone by, it is one; on
// engines without that failover it is one after 2×TTL, as before.
func TestNoProgressWindow(t *testing.T) {
	const ttl = 2 * time.Second
	healed := time.Unix(100, 0)
	in := &injector{injected: 2, lastHeal: healed, lastHeld: 0}
	before := []section{sec(0, 1, 1, healed.Add(-5*time.Second).UnixNano(), healed.Add(-3*time.Second).UnixNano())}
	for _, c := range []struct {
		engine string
		after  time.Duration // the workload stopped this long after the heal
		want   int
	}{
		{"consul3", 4500 * time.Millisecond, 0},
		{"consul3", 2*ttl + consulFailover, 1},
		{"consul", 4500 * time.Millisecond, 1},
		{"etcd3", 4500 * time.Millisecond, 1},
		{"etcd3", 2*ttl - time.Millisecond, 0},
	} {
		if got := noProgress(before, in, healed.Add(c.after), progressWindow(c.engine, ttl)); got != c.want {
			t.Errorf("%s, stopped %v after the heal: no_progress %d, want %d", c.engine, c.after, got, c.want)
		}
	}
	progress := append(before, sec(1, 2, 2, healed.Add(8*time.Second).UnixNano(), healed.Add(9*time.Second).UnixNano()))
	if got := noProgress(progress, in, healed.Add(10*time.Second), progressWindow("consul3", ttl)); got != 0 {
		t.Errorf("consul3 with a section 8 s after the heal: no_progress %d, want 0", got)
	}
}
