package metrics

import (
	"bytes"
	"maps"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads a textfile with Prometheus's own parser. It accepts the
// UTF-8 names newer writers may use, so another writer's families are
// read, and written back, as they are.
func parse(data []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(data))
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
