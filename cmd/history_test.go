package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/lock/memstore"
)

// The "done when" through the factory seam on the in-memory store:
// a failed --once-per run exits with its status, the next runs and exits
// 0, a third exits 0 without running its command and says why, and
// history lists the runs newest first.
func TestOncePerRetriedThenSkipped(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	run := func(script string, extra ...string) (int, string) {
		f, _, errb := memFactory(s)
		args := append([]string{"run", "--key", "job", "--once-per", "1h"}, extra...)
		return Run(ctx, f, append(args, "--", "sh", "-c", script)), errb.String()
	}
	if code, errs := run("exit 3"); code != 3 {
		t.Fatalf("first run: exit %d (%s), want 3", code, errs)
	}
	if code, errs := run("exit 0"); code != 0 || errs != "" {
		t.Fatalf("second run: exit %d (%s), want 0 and nothing said", code, errs)
	}
	if code, errs := run("exit 9"); code != 0 || !strings.Contains(errs, "was done at") || !strings.Contains(errs, "the command was not run") {
		t.Fatalf("third run: exit %d, stderr %q; want 0 and the skip line", code, errs)
	}
	if code, errs := run("exit 9", "--quiet"); code != 0 || errs != "" {
		t.Fatalf("quiet skip: exit %d, stderr %q; want 0 and silence", code, errs)
	}
	f, out, _ := memFactory(s)
	if code := Run(ctx, f, []string{"history", "job", "-o", "json"}); code != 0 {
		t.Fatalf("history: exit %d", code)
	}
	var runs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil {
		t.Fatalf("history -o json: %v in %q", err, out)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r["outcome"].(string))
		for _, k := range []string{"token", "host", "started", "ended", "exit_code", "holder_id", "pid", "duration_ms"} {
			if _, ok := r[k]; !ok {
				t.Errorf("history -o json lacks %q: %v", k, r)
			}
		}
	}
	if strings.Join(got, " ") != "skipped skipped ok failed" || runs[3]["exit_code"].(float64) != 3 {
		t.Fatalf("history outcomes %v (%q), want skipped skipped ok failed with 3 last", got, out)
	}
	f, out, _ = memFactory(s)
	if code := Run(ctx, f, []string{"status", "job"}); code != exitFree || !strings.Contains(out.String(), "last success: ok (exit 0)") {
		t.Fatalf("status: exit %d, stdout %q", code, out)
	}
}

// history of a key never run: one line, or [], exit 0; bad input 64.
func TestHistoryNeverRunAndBadInput(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	f, out, _ := memFactory(s)
	if code := Run(ctx, f, []string{"history", "none"}); code != 0 || out.String() != "no runs of none recorded\n" {
		t.Fatalf("history: exit %d, %q", code, out)
	}
	f, out, _ = memFactory(s)
	if code := Run(ctx, f, []string{"history", "none", "-o", "json"}); code != 0 || out.String() != "[]\n" {
		t.Fatalf("history -o json: exit %d, %q", code, out)
	}
	for _, args := range [][]string{
		{"run", "--key", "k", "--once-per", "999ms", "--", "true"},
		{"run", "--key", "k", "--once-per", "soon", "--", "true"},
		{"run", "--key", "k", "--slot", "", "--", "true"},
		{"run", "--key", "k", "--slot", strings.Repeat("x", 201), "--", "true"},
		{"history", "k", "-n", "-2"},
	} {
		f, _, errb := memFactory(s)
		if code := Run(ctx, f, args); code != exitUsage || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 64 and one line", args, code, errb)
		}
	}
}
