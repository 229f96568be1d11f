package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseFile reads path with Prometheus's own text parser, with the strict
// (legacy) name rules node_exporter's textfile collector applies.
func parseFile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("%s does not parse as Prometheus text: %v\n%s", path, err, b)
	}
	return fams
}

// value is the sample of family name whose labels are exactly labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(got) != fmt.Sprint(labels) {
			continue
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		}
		t.Fatalf("%s has type %s", name, fam.GetType())
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

func key(k string) map[string]string { return map[string]string{"key": k} }
func keyOutcome(k string, o Outcome) map[string]string {
	return map[string]string{"key": k, "outcome": string(o)}
}

func run(k string, o Outcome, code int) Run {
	start := time.UnixMilli(1_700_000_000_250)
	return Run{Key: k, Start: start, End: start.Add(90 * time.Second), Wait: 1500 * time.Millisecond, ExitCode: code, Outcome: o}
}

// TestWriteParses: one run gives every documented series, with its types,
// and the file is readable by node_exporter (mode 0644), with no temporary
// file left behind.
func TestWriteParses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "distlock.prom")
	if err := Write(path, run("job:daily", Ran, 0)); err != nil {
		t.Fatal(err)
	}
	fams := parseFile(t, path)
	for name, want := range map[string]float64{
		mStart: 1_700_000_000.25, mEnd: 1_700_000_090.25, mDuration: 90, mWait: 1.5, mExit: 0,
	} {
		if got := value(t, fams, name, key("job:daily")); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
		if typ := fams[name].GetType(); typ != dto.MetricType_GAUGE {
			t.Errorf("%s is a %s, want a gauge", name, typ)
		}
	}
	if typ := fams[mRuns].GetType(); typ != dto.MetricType_COUNTER {
		t.Errorf("%s is a %s, want a counter", mRuns, typ)
	}
	for _, o := range Outcomes {
		want := 0.0
		if o == Ran {
			want = 1
		}
		if got := value(t, fams, mOutcome, keyOutcome("job:daily", o)); got != want {
			t.Errorf("outcome %s = %v, want %v", o, got, want)
		}
		if got := value(t, fams, mRuns, keyOutcome("job:daily", o)); got != want {
			t.Errorf("runs %s = %v, want %v", o, got, want)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "distlock.prom distlock.prom.lock" {
		t.Errorf("the directory holds %v, want the file and its lock", names)
	}
}

// TestBusyThenRan: a busy run records that it was busy; the counters add
// up across runs and the last run's series are the last run's.
func TestBusyThenRan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	for _, r := range []Run{run("job", Ran, 0), run("job", Busy, 75), run("job", Busy, 0)} {
		if err := Write(path, r); err != nil {
			t.Fatal(err)
		}
	}
	fams := parseFile(t, path)
	if got := value(t, fams, mOutcome, keyOutcome("job", Busy)); got != 1 {
		t.Errorf("last outcome busy = %v, want 1", got)
	}
	if got := value(t, fams, mOutcome, keyOutcome("job", Ran)); got != 0 {
		t.Errorf("last outcome ran = %v, want 0", got)
	}
	if got := value(t, fams, mRuns, keyOutcome("job", Busy)); got != 2 {
		t.Errorf("busy runs = %v, want 2", got)
	}
	if got := value(t, fams, mRuns, keyOutcome("job", Ran)); got != 1 {
		t.Errorf("ran runs = %v, want 1", got)
	}
	if got := value(t, fams, mExit, key("job")); got != 0 {
		t.Errorf("exit code = %v, want 0 (the last run's)", got)
	}
}

// TestKeysShareAFile: writing one key keeps the others' series, whatever
// their keys hold (quotes, backslashes, non-ASCII), and drops lines that
// distlock did not write.
func TestKeysShareAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	odd := `deploy "prod" \ ключ`
	if err := os.WriteFile(path, []byte("# a comment\nsomething_else 1\ngarbage{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Run{run("a", Ran, 0), run(odd, Lost, 76), run("a", MaxHold, 124)} {
		if err := Write(path, r); err != nil {
			t.Fatal(err)
		}
	}
	fams := parseFile(t, path)
	if _, ok := fams["something_else"]; ok {
		t.Error("a foreign series was kept")
	}
	if got := value(t, fams, mExit, key(odd)); got != 76 {
		t.Errorf("%q exit = %v, want 76", odd, got)
	}
	if got := value(t, fams, mOutcome, keyOutcome(odd, Lost)); got != 1 {
		t.Errorf("%q lost = %v, want 1", odd, got)
	}
	if got := value(t, fams, mRuns, keyOutcome("a", Ran)); got != 1 {
		t.Errorf("a ran = %v, want 1", got)
	}
	if got := value(t, fams, mOutcome, keyOutcome("a", MaxHold)); got != 1 {
		t.Errorf("a max_hold = %v, want 1", got)
	}
}

// TestConcurrentWriters: writers racing on one file (each with its own
// open file description on the lock, as separate processes have) lose no
// run and no key.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	const keys, each = 4, 10
	var wg sync.WaitGroup
	for k := range keys {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := Write(path, run(fmt.Sprintf("k%d", k), Busy, 75)); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	fams := parseFile(t, path)
	for k := range keys {
		if got := value(t, fams, mRuns, keyOutcome(fmt.Sprintf("k%d", k), Busy)); got != each {
			t.Errorf("k%d busy runs = %v, want %d", k, got, each)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "x.prom"), Run{Key: "k", Outcome: "odd"}); err == nil {
		t.Error("an unknown outcome was written")
	}
	if err := Write(filepath.Join(t.TempDir(), "no", "such", "dir.prom"), run("k", Ran, 0)); err == nil {
		t.Error("a file in a missing directory was written")
	}
}
