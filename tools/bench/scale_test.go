package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The first failure is the earliest error line of any run; a run that
// never acquired, or exited other than 0, counts as failed too.
func TestFleetFirstFailure(t *testing.T) {
	t0 := time.Unix(100, 0)
	ok := &holderRun{acquired: t0, exited: true}
	late := &holderRun{failure: "distlock: late", failedAt: t0.Add(2 * time.Second), exited: true, exitErr: errors.New("exit status 69")}
	early := &holderRun{failure: "distlock: early", failedAt: t0.Add(time.Second), exited: true, exitErr: errors.New("exit status 69")}
	silent := &holderRun{acquired: t0, exited: true, exitErr: errors.New("exit status 1")}
	f := &holderFleet{runs: []*holderRun{ok, late, early, silent}}
	first, failed := f.firstFailure()
	if first != "distlock: early" || failed != 3 {
		t.Fatalf("firstFailure = %q, %d; want the earliest line and 3 failed", first, failed)
	}
	f.runs = []*holderRun{ok, silent}
	if first, failed = f.firstFailure(); first != "exit: exit status 1" || failed != 1 {
		t.Fatalf("firstFailure = %q, %d; want the failed exit when no run logged an error", first, failed)
	}
}

func TestPrintScaleRows(t *testing.T) {
	req := 0.5
	r := &ScaleResults{
		Limits:  map[string]string{"zookeeper": "maxClientCnxns=60"},
		Counted: map[string]string{},
		order:   []string{"redis", "zookeeper"},
		tools:   []string{"distlock redis", "flock"},
		Holders: map[string][]HoldersStat{
			"redis":     {{Holders: 200, AllOK: true, TTLSeconds: 6, idleFigures: idleFigures{PrivateMB: 0.6, DirtyMB: 0.6, RenewalsPerTTL3: 1, ReqPerSec: &req}}},
			"zookeeper": {{Holders: 200, Failed: 140, FirstError: "distlock: a | b", TTLSeconds: 6}},
		},
		Queues: map[string][]QueueStat{
			"distlock redis": {{Waiters: 50, Sections: 2, HandoverStat: HandoverStat{P50ms: 10, P99ms: 20, Counted: true, ReqPerWaiterPerHandover: 1.2}}},
			"flock":          {{Waiters: 50, Sections: 2, Error: "exit status 1"}},
		},
	}
	var b strings.Builder
	printScale(&b, r)
	for _, want := range []string{
		"| redis | 200 | yes | 0.0 | 0.60 (0.60) | 1.00 | 0.50 | 0.00 | - |",
		"| zookeeper | 200 | no: 140 of 200 failed; first: distlock: a / b |",
		"| distlock redis | 50 × 2 | 10.0 / 20.0 | 0.0 / 0.0 | 1.20 | 0.0 |",
		"| flock | 50 × 2 | failed: exit status 1 | | | |",
		"zookeeper maxClientCnxns=60",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestSectionsFor(t *testing.T) {
	for _, c := range []struct{ n, given, want int }{{8, 0, 13}, {50, 0, 2}, {200, 0, 2}, {1, 0, 100}, {8, 3, 3}} {
		if got := sectionsFor(c.n, c.given); got != c.want {
			t.Errorf("sectionsFor(%d, %d) = %d, want %d", c.n, c.given, got, c.want)
		}
	}
}

// fakeTotal is a server-wide total that each reading adds self to, and
// that clients add to between readings (late, as ended backends report).
type fakeTotal struct {
	n, self int64
	pending []int64 // added by the next readings, one each
}

func (f *fakeTotal) read() (int64, error) {
	v := f.n // a reading is counted by the next one
	f.n += f.self
	if len(f.pending) > 0 {
		f.n += f.pending[0]
		f.pending = f.pending[1:]
	}
	return v, nil
}

func (f *fakeTotal) what() string { return "fake" }

// The window counts what clients added, however late they report it,
// and none of the bench's own readings.
func TestSettledCounter(t *testing.T) {
	f := &fakeTotal{n: 1000, self: 2}
	c, err := newSettledCounter(f)
	if err != nil || c.self != 2 {
		t.Fatalf("self = %d, %v; want 2", c.self, err)
	}
	w, err := c.begin()
	if err != nil {
		t.Fatal(err)
	}
	f.n += 40                 // the clients' requests, reported at once
	f.pending = []int64{5, 3} // and 8 more, reported late
	n, err := w.end()
	if err != nil || n.Requests != 48 {
		t.Fatalf("window = %d, %v; want 48", n.Requests, err)
	}
}
