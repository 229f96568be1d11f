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

// has reports whether fams holds a sample of name with exactly labels.
func has(fams map[string]*dto.MetricFamily, name string, labels map[string]string) bool {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(got) == fmt.Sprint(labels) {
			return true
		}
	}
	return false
}

func key(k string) map[string]string { return map[string]string{"key": k} }
func keyOutcome(k string, o Outcome) map[string]string {
	return map[string]string{"key": k, "outcome": string(o)}
}

// byOutcome checks the samples of name for key, outcome by outcome.
func byOutcome(t *testing.T, fams map[string]*dto.MetricFamily, name, k string, want map[Outcome]float64) {
	t.Helper()
	for o, w := range want {
		if got := value(t, fams, name, keyOutcome(k, o)); got != w {
			t.Errorf("%s of %s, outcome %s = %v, want %v", name, k, o, got, w)
		}
	}
}

// t0 is when the runs of these tests start, to the millisecond.
var t0 = time.UnixMilli(1_700_000_000_250)

// run is a 90 s run of k starting day days after t0, ending with o and
// distlock exiting code; a failed run's command exited code too.
func run(k string, o Outcome, code int, day int) Run {
	start := t0.Add(time.Duration(day) * 24 * time.Hour)
	r := Run{Key: k, Start: start, End: start.Add(90 * time.Second), Wait: 1500 * time.Millisecond, ExitCode: code, Outcome: o}
	if o == Failed {
		r.CommandExit = code
	}
	return r
}

func write(t *testing.T, path string, runs ...Run) {
	t.Helper()
	for _, r := range runs {
		if err := Write(path, r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteParses: one ok run gives every documented series, with its
// types, and the file is readable by node_exporter (mode 0644), with no
// temporary file left behind.
func TestWriteParses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "distlock.prom")
	write(t, path, run("job:daily", OK, 0, 0))
	fams := parseFile(t, path)
	for name, want := range map[string]float64{
		mStart: 1_700_000_000.25, mEnd: 1_700_000_090.25, mDuration: 90, mWait: 1.5, mExit: 0,
		mCommandExit: 0, mSuccess: 1_700_000_090.25,
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
		want := oneIf(o == OK)
		if got := value(t, fams, mOutcome, keyOutcome("job:daily", o)); got != want {
			t.Errorf("outcome %s = %v, want %v", o, got, want)
		}
		if got := value(t, fams, mRuns, keyOutcome("job:daily", o)); got != want {
			t.Errorf("runs %s = %v, want %v", o, got, want)
		}
	}
	for name, f := range fams {
		if f.GetHelp() != families[name].help {
			t.Errorf("%s has HELP %q", name, f.GetHelp())
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

// TestFailedRunKeepsLastSuccess: a command that exits 1 is a failed run
// with command exit code 1; the last run's times move, the last success
// does not, and neither does it for a busy run, which has no command exit
// code at all.
func TestFailedRunKeepsLastSuccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	write(t, path, run("job", OK, 0, 0), run("job", Failed, 1, 1))
	fams := parseFile(t, path)
	success := value(t, fams, mSuccess, key("job"))
	if want := seconds(run("job", OK, 0, 0).End); success != want {
		t.Errorf("last success = %v, want the ok run's end %v", success, want)
	}
	if got, want := value(t, fams, mEnd, key("job")), seconds(run("job", Failed, 1, 1).End); got != want {
		t.Errorf("last run end = %v, want the failed run's %v", got, want)
	}
	for name, want := range map[string]float64{mExit: 1, mCommandExit: 1} {
		if got := value(t, fams, name, key("job")); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	byOutcome(t, fams, mOutcome, "job", map[Outcome]float64{OK: 0, Failed: 1})
	byOutcome(t, fams, mRuns, "job", map[Outcome]float64{OK: 1, Failed: 1})

	write(t, path, run("job", Busy, 75, 2))
	fams = parseFile(t, path)
	if got := value(t, fams, mSuccess, key("job")); got != success {
		t.Errorf("after a busy run, last success = %v, want %v", got, success)
	}
	if has(fams, mCommandExit, key("job")) {
		t.Error("a busy run left a command exit code")
	}

	write(t, path, run("never", Failed, 2, 0))
	if has(parseFile(t, path), mSuccess, key("never")) {
		t.Error("a key that never succeeded has a last success")
	}
}

// TestSkippedRun: a run whose slot was already done counts as skipped; it
// ran no command (no command exit code) and keeps the last success.
func TestSkippedRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	write(t, path, run("job", OK, 0, 0), run("job", Skipped, 0, 1))
	fams := parseFile(t, path)
	byOutcome(t, fams, mOutcome, "job", map[Outcome]float64{Skipped: 1, OK: 0})
	byOutcome(t, fams, mRuns, "job", map[Outcome]float64{Skipped: 1, OK: 1})
	if has(fams, mCommandExit, key("job")) {
		t.Error("a skipped run left a command exit code")
	}
	if got, want := value(t, fams, mSuccess, key("job")), seconds(run("job", OK, 0, 0).End); got != want {
		t.Errorf("last success = %v, want the ok run's end %v", got, want)
	}
}

// TestEmptyFile: a file that exists but holds nothing (or only comments)
// is a file with no series yet.
func TestEmptyFile(t *testing.T) {
	for _, content := range []string{"", "# written by hand\n"} {
		path := filepath.Join(t.TempDir(), "distlock.prom")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		write(t, path, run("job", OK, 0, 0))
		if got := value(t, parseFile(t, path), mRuns, keyOutcome("job", OK)); got != 1 {
			t.Errorf("after %q: ok runs = %v, want 1", content, got)
		}
	}
}

// TestBusyThenOK: a busy run records that it was busy; the counters add
// up across runs and the last run's series are the last run's.
func TestBusyThenOK(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	write(t, path, run("job", OK, 0, 0), run("job", Busy, 75, 1), run("job", Busy, 0, 2))
	fams := parseFile(t, path)
	byOutcome(t, fams, mOutcome, "job", map[Outcome]float64{Busy: 1, OK: 0})
	byOutcome(t, fams, mRuns, "job", map[Outcome]float64{Busy: 2, OK: 1})
	if got := value(t, fams, mExit, key("job")); got != 0 {
		t.Errorf("exit code = %v, want 0 (the last run's)", got)
	}
}

// foreign is what other writers put in a shared file: families of every
// type, with and without HELP and TYPE, a timestamp, a UTF-8 name.
const foreign = `# HELP backup_last_success_timestamp_seconds Another writer's gauge.
# TYPE backup_last_success_timestamp_seconds gauge
backup_last_success_timestamp_seconds{job="nightly"} 1.7e+09
backup_runs_total{job="nightly"} 12 1700000000000
# TYPE backup_duration_seconds histogram
backup_duration_seconds_bucket{le="1"} 3
backup_duration_seconds_bucket{le="+Inf"} 5
backup_duration_seconds_sum 7.5
backup_duration_seconds_count 5
# TYPE backup_size_bytes summary
backup_size_bytes{quantile="0.5"} 100
backup_size_bytes_sum 300
backup_size_bytes_count 3
{"backup.ok", job="nightly"} 1
`

// TestKeysShareAFile: writing one key keeps the other keys' series,
// whatever their keys hold (quotes, backslashes, non-ASCII), and every
// family distlock does not write, as it was.
func TestKeysShareAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	odd := `deploy "prod" \ ключ`
	if err := os.WriteFile(path, []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := parse([]byte(foreign))
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, run("a", OK, 0, 0), run(odd, Lost, 76, 0), run("a", MaxHold, 124, 1))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	for name, f := range want {
		if g, w := text(t, got[name]), text(t, f); g != w {
			t.Errorf("another writer's %s became\n%s\nwas\n%s", name, g, w)
		}
	}
	if got := value(t, got, mExit, key(odd)); got != 76 {
		t.Errorf("%q exit = %v, want 76", odd, got)
	}
	if got := value(t, got, mOutcome, keyOutcome(odd, Lost)); got != 1 {
		t.Errorf("%q lost = %v, want 1", odd, got)
	}
	if got := value(t, got, mRuns, keyOutcome("a", OK)); got != 1 {
		t.Errorf("a ok = %v, want 1", got)
	}
	if got := value(t, got, mOutcome, keyOutcome("a", MaxHold)); got != 1 {
		t.Errorf("a max_hold = %v, want 1", got)
	}
	if got := value(t, got, mSuccess, key("a")); got != seconds(run("a", OK, 0, 0).End) {
		t.Errorf("a's last success = %v, want its ok run's end", got)
	}
}

// text is f in the text format ("" for nil).
func text(t *testing.T, f *dto.MetricFamily) string {
	t.Helper()
	if f == nil {
		return ""
	}
	var b strings.Builder
	if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// older is a file as distlock wrote it before it told ok from failed.
const older = `# HELP distlock_last_run_exit_code The exit status of the last distlock run of the key.
# TYPE distlock_last_run_exit_code gauge
distlock_last_run_exit_code{key="job"} 0
distlock_last_run_exit_code{key="other"} 3
# HELP distlock_last_run_outcome 1 for how the last distlock run of the key ended (ran, busy, lost, max_hold, error), 0 for the others.
# TYPE distlock_last_run_outcome gauge
distlock_last_run_outcome{key="job",outcome="ran"} 1
distlock_last_run_outcome{key="job",outcome="busy"} 0
distlock_last_run_outcome{key="other",outcome="ran"} 1
distlock_last_run_outcome{key="other",outcome="busy"} 0
# HELP distlock_runs_total distlock runs of the key, by how they ended.
# TYPE distlock_runs_total counter
distlock_runs_total{key="job",outcome="ran"} 5
distlock_runs_total{key="job",outcome="busy"} 2
distlock_runs_total{key="other",outcome="ran"} 1
distlock_runs_total{key="other",outcome="busy"} 0
`

// TestOlderRanSeries: in a file from an older distlock, a key's "ran"
// count is kept as it is (it no longer rises); its "ran" last outcome goes
// once the key is written again (one outcome is 1 at a time); other keys
// are untouched; the counts of outcomes that still exist go on.
func TestOlderRanSeries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	if err := os.WriteFile(path, []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, path, run("job", Failed, 1, 0))
	fams := parseFile(t, path)
	byOutcome(t, fams, mRuns, "job", map[Outcome]float64{legacyRan: 5, Busy: 2, Failed: 1, OK: 0})
	if has(fams, mOutcome, keyOutcome("job", legacyRan)) {
		t.Error(`job's last outcome "ran" is still there`)
	}
	if got := value(t, fams, mOutcome, keyOutcome("job", Failed)); got != 1 {
		t.Errorf("job's last outcome failed = %v, want 1", got)
	}
	if got := value(t, fams, mOutcome, keyOutcome("other", legacyRan)); got != 1 {
		t.Errorf(`other's last outcome "ran" = %v, want 1 (untouched)`, got)
	}
	if got := value(t, fams, mExit, key("other")); got != 3 {
		t.Errorf("other's exit code = %v, want 3 (untouched)", got)
	}
	if got := fams[mRuns].GetHelp(); got != families[mRuns].help {
		t.Errorf("HELP of %s is still %q", mRuns, got)
	}
}

// TestNotPromTextLeftAlone: a file that does not parse is not replaced
// (it may be another writer's, half-edited); Write says why.
func TestNotPromTextLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "distlock.prom")
	const junk = "something_else 1\ngarbage{\n"
	if err := os.WriteFile(path, []byte(junk), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(path, run("job", OK, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "not Prometheus text format") {
		t.Errorf("Write = %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(path); string(b) != junk {
		t.Errorf("the file became %q", b)
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
				if err := Write(path, run(fmt.Sprintf("k%d", k), Busy, 75, 0)); err != nil {
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
	dir := t.TempDir()
	for name, r := range map[string]Run{
		"an unknown outcome":                  {Key: "k", Outcome: "odd"},
		`an older distlock's "ran"`:           {Key: "k", Outcome: legacyRan},
		"an ok run whose command failed":      {Key: "k", Outcome: OK, CommandExit: 1},
		"a failed run whose command exited 0": {Key: "k", Outcome: Failed},
	} {
		if err := Write(filepath.Join(dir, "x.prom"), r); err == nil {
			t.Errorf("%s was written", name)
		}
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir.prom"), run("k", OK, 0, 0)); err == nil {
		t.Error("a file in a missing directory was written")
	}
}
