package main

import (
	"slices"
	"testing"
	"time"
)

const rollup = `55ab888e0000-7ffdbfe71000 ---p 00000000 00:00 0                          [rollup]
Rss:                1780 kB
Pss:                 203 kB
Shared_Clean:       1628 kB
Shared_Dirty:          0 kB
Private_Clean:        40 kB
Private_Dirty:       112 kB
Referenced:         1780 kB
Private_Hugetlb:       0 kB
`

func TestParsePrivate(t *testing.T) {
	p, d, err := parsePrivate(rollup)
	if err != nil || p != 152 || d != 112 {
		t.Fatalf("parsePrivate = %d, %d, %v; want 152, 112", p, d, err)
	}
	for _, bad := range []string{"", "Private_Clean: 40 kB\n", "Private_Clean: x kB\nPrivate_Dirty: 1 kB\n", "Private_Clean: 4 MB\nPrivate_Dirty: 1 kB\n"} {
		if _, _, err := parsePrivate(bad); err == nil {
			t.Errorf("parsePrivate(%q) took it", bad)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	d, err := parseSchedstat("696911 44120 1\n")
	if err != nil || d != 696911*time.Nanosecond {
		t.Fatalf("parseSchedstat = %v, %v", d, err)
	}
	if _, err := parseSchedstat("1 2"); err == nil {
		t.Error("took two fields")
	}
}

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses.
	line := "4242 (distlock (x) y) S 4000 4242 4242 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 5 0 100 1000 10 0 0"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.comm != "distlock (x) y" || st.ppid != 4000 || st.ticks != 13 {
		t.Fatalf("parseStat = %+v; want comm \"distlock (x) y\", ppid 4000, ticks 13", st)
	}
	if _, err := parseStat("4242 (sh) S 1 2"); err == nil {
		t.Error("took a short stat")
	}
}

func TestTreeAndHelpers(t *testing.T) {
	procs := procTable{
		10: {comm: "distlock", ppid: 1},
		11: {comm: "distlock-watch", ppid: 10, ticks: 2},
		12: {comm: "distlock-pin", ppid: 11, ticks: 1},
		13: {comm: "cat", ppid: 10, ticks: 5}, // the command
		14: {comm: "sleep", ppid: 13},
		20: {comm: "distlock", ppid: 1}, // another holder
	}
	got := procs.tree(10)
	slices.Sort(got)
	if !slices.Equal(got, []int{10, 11, 12, 13, 14}) {
		t.Errorf("tree(10) = %v", got)
	}
	h := procs.helpers(10)
	slices.Sort(h)
	if !slices.Equal(h, []int{10, 11, 12}) {
		t.Errorf("helpers(10) = %v; want distlock, its watcher and pin, not the command", h)
	}
	if n := procs.ticks(h); n != 3 {
		t.Errorf("ticks = %d, want 3", n)
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("1, 50,200,")
	if err != nil || !slices.Equal(got, []int{1, 50, 200}) {
		t.Fatalf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "a", "5,-1"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) took it", bad)
		}
	}
}

func TestHolderRunLines(t *testing.T) {
	h := &holderRun{}
	t0 := time.Unix(100, 0)
	h.line("time=x level=INFO msg=acquired key=a token=1", t0)
	h.line("time=x level=DEBUG msg=renewed key=a latency=1ms", t0.Add(2*time.Second))
	h.line("time=x level=DEBUG msg=renewed key=a latency=1ms", t0.Add(4*time.Second))
	h.line("time=x level=ERROR msg=\"lost the lock\" key=a", t0.Add(5*time.Second))
	h.line("distlock: lost the lock", t0.Add(6*time.Second))
	if a, _ := h.state(); !a {
		t.Error("not acquired")
	}
	if n := h.renewalsIn(t0.Add(time.Second), t0.Add(4*time.Second)); n != 1 {
		t.Errorf("renewalsIn = %d, want 1 (the end is open)", n)
	}
	if h.failure != `time=x level=ERROR msg="lost the lock" key=a` {
		t.Errorf("failure = %q, want the first error line", h.failure)
	}
}
