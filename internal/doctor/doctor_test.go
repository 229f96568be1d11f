package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/backend/file"
	"github.com/distlock/distlock/internal/lock"
)

func TestLatencyCheck(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		samples []time.Duration
		ttl     time.Duration
		want    lock.CheckStatus
		says    string
	}{
		{[]time.Duration{ms, 2 * ms, 3 * ms, 100 * ms, ms}, 30 * time.Second, lock.CheckOK, "median round trip 2ms over 5 requests (slowest 100ms); --ttl 30s is 15000×"},
		{[]time.Duration{ms, 3 * ms}, 30 * time.Second, lock.CheckOK, "median round trip 2ms over 2"},
		{[]time.Duration{100 * ms, 100 * ms, 100 * ms}, 3 * time.Second, lock.CheckWarning, "is 30.0× that"},
		{[]time.Duration{500 * ms, 500 * ms, 500 * ms}, 3 * time.Second, lock.CheckProblem, "is 6.0× that"},
	} {
		c := LatencyCheck(tc.samples, tc.ttl)
		if c.Name != "latency" || c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || (c.Status == lock.CheckOK) != (c.Fix == "") {
			t.Errorf("LatencyCheck(%v, %s) = %+v, want %s saying %q", tc.samples, tc.ttl, c, tc.want, tc.says)
		}
	}
	if c := LatencyCheck([]time.Duration{500 * ms}, 3*time.Second); !strings.Contains(c.Fix, "raise --ttl to at least 25s") {
		t.Errorf("the fix should name a TTL 50× the median: %q", c.Fix)
	}
}

func opts(key string) Options {
	return Options{Key: key, TTL: 5 * time.Second, Timeout: 2 * time.Second, Meta: lock.Meta{Host: "h", PID: 1}}
}

// TestRunOnFile: the file engine passes the engine-neutral checks and adds
// its own; the scratch lock is free afterwards.
func TestRunOnFile(t *testing.T) {
	b, err := file.Open(t.TempDir(), "distlock")
	if err != nil {
		t.Fatal(err)
	}
	checks := Run(context.Background(), b, opts("doctor:h"))
	seen := map[string]lock.Check{}
	for _, c := range checks {
		seen[c.Name] = c
	}
	for _, n := range []string{"latency", "lock", "filesystem", "writable", "flock", "clock"} {
		if _, ok := seen[n]; !ok {
			t.Errorf("no %s check in %+v", n, checks)
		}
	}
	if c := seen["lock"]; c.Status != lock.CheckOK || !strings.Contains(c.Detail, "fencing tokens rose") {
		t.Errorf("lock: %+v", c)
	}
	if c := seen["latency"]; c.Status != lock.CheckOK {
		t.Errorf("latency: %+v", c)
	}
	if _, held, err := b.Inspect(context.Background(), "doctor:h"); err != nil || held {
		t.Errorf("after doctor the scratch key is held=%v (err %v), want free", held, err)
	}
}

// TestLockCycleBusy: a scratch key someone holds is left alone, and doctor
// says so as a warning.
func TestLockCycleBusy(t *testing.T) {
	b, err := file.Open(t.TempDir(), "distlock")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := lock.TryOnce(ctx, b, lock.Request{Key: "doctor:h", TTL: 5 * time.Second, Owner: "someone", Meta: lock.Meta{Host: "other", PID: 42}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	c := LockCycle(ctx, b, opts("doctor:h"))
	if c.Status != lock.CheckWarning || !strings.Contains(c.Detail, "held by other pid 42") || !strings.Contains(c.Fix, "--key") {
		t.Errorf("LockCycle on a held key = %+v, want a warning naming the holder", c)
	}
	if h, held, _ := b.Inspect(ctx, "doctor:h"); !held || h.Owner != "someone" {
		t.Errorf("the holder lost its lock to doctor: %+v held=%v", h, held)
	}
}

// TestRunWithoutEngineChecks: an engine that does not implement
// lock.Doctor gets a warning that its settings were not checked.
func TestRunWithoutEngineChecks(t *testing.T) {
	b, err := file.Open(t.TempDir(), "distlock")
	if err != nil {
		t.Fatal(err)
	}
	plain := struct{ lock.Backend }{b} // hides the optional method
	checks := Run(context.Background(), plain, opts("doctor:h"))
	last := checks[len(checks)-1]
	if len(checks) != 3 || last.Name != "engine" || last.Status != lock.CheckWarning {
		t.Errorf("Run on an engine without checks = %+v, want latency, lock and an engine warning", checks)
	}
}
