package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseErrorQuotesNoText: a file that does not parse is refused with
// the line it stopped at and what was expected there, never with any of
// its text (a name, a label, a value), wherever the parser stopped.
func TestParseErrorQuotesNoText(t *testing.T) {
	for content, line := range map[string]string{
		"ok 1\nx hunter2\n":                                "line 2: expected float as value",
		"x 1 hunter2\n":                                    "line 1: expected integer as timestamp",
		"x 1 2 hunter2\n":                                  "line 1: spurious string after timestamp",
		"x{a=hunter2} 1\n":                                 `line 1: expected '"' at start of label value`,
		"# TYPE x hunter2\n":                               "line 1: unknown metric type",
		"# HELP hunter2 a\n# HELP hunter2 b\n":             "line 2: second HELP line for metric name",
		"# TYPE h histogram\nh_bucket{le=\"hunter2\"} 1\n": "line 2: expected float as value for 'le' label",
		"x{a=\"hunter2\nx 1\n":                             "line 1: label value contains unescaped new-line",
		"x{hunter2\n":                                      "line 1: expected '=' after label name",
	} {
		path := filepath.Join(t.TempDir(), "distlock.prom")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Write(path, run("job", OK, 0, 0))
		if err == nil || !strings.Contains(err.Error(), "not Prometheus text format") {
			t.Errorf("%q: Write = %v, want a refusal", content, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), line) {
			t.Errorf("%q: Write = %v, want %q and none of the file's text", content, err, line)
		}
	}
}
