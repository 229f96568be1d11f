package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads a textfile with Prometheus's own parser. It accepts the
// UTF-8 names newer writers may use, so another writer's families are
// read, and written back, as they are. Its error quotes none of data.
func parse(data []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, withoutText(err)
	}
	return fams, nil
}

// quoted is what expfmt's messages quote: a Go-quoted string, or a
// Go-quoted byte.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)

// withoutText is a parse error as the line it stopped at and what the
// parser expected there, with nothing of the file's text: the file may not
// be metrics at all, and the error goes to stderr and logs. expfmt says
// what it got after ", got " or ", found " (its own text before that
// quotes only syntax, such as '='), and quotes names and values elsewhere.
func withoutText(err error) error {
	msg, line := err.Error(), 0
	var pe expfmt.ParseError
	if errors.As(err, &pe) {
		msg, line = pe.Msg, pe.Line
	}
	before, _, got := strings.Cut(msg, ", got ")
	if !got {
		before, _, got = strings.Cut(msg, ", found ")
	}
	if got {
		msg = quoted.ReplaceAllStringFunc(before, dropDoubleQuoted)
	} else {
		msg = quoted.ReplaceAllString(msg, "")
	}
	msg = strings.TrimRight(strings.Join(strings.Fields(strings.ReplaceAll(msg, " ,", ",")), " "), ":")
	if line == 0 {
		return errors.New(msg)
	}
	return fmt.Errorf("line %d: %s", line, msg)
}

// dropDoubleQuoted drops a quoted string, keeping a quoted byte (expfmt's
// own syntax, such as '=').
func dropDoubleQuoted(q string) string {
	if strings.HasPrefix(q, `"`) {
		return ""
	}
	return q
}

// render writes every family with expfmt's text encoder, families sorted
// by name; a family left with no series is left out.
func render(fams map[string]*dto.MetricFamily) ([]byte, error) {
	var b bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		if f := fams[name]; len(f.GetMetric()) > 0 {
			if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
				return nil, err
			}
		}
	}
	return b.Bytes(), nil
}
