package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCronCount: the cron check finds a slot run twice and a slot never
// run, and counts first runs that failed or were killed.
func TestCronCount(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs.log")
	lines := "s1 fail 10\ns1 ok 11\ns2 ok 12\ns2 ok 13\ns3 killed 14\n"
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cronFire{log: log}
	var r cronRow
	if err := c.count(&r, []string{"fail", "ok", "kill"}); err != nil {
		t.Fatal(err)
	}
	if r.Successes != 3 || r.Twice != 1 || r.Missed != 1 || r.FailedFirst != 1 || r.KilledFirst != 1 {
		t.Fatalf("count = %+v; want 3 successes, 1 slot twice, 1 missed, 1 failed, 1 killed", r)
	}
}
