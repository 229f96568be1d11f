package metrics

import (
	"cmp"
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// merge puts r into fams, the file's families by name. r.Key's series of
// distlock's families are replaced by r's; its runs are counted on from the
// file's counts; its last success is moved by an OK run and kept
// otherwise. Other keys' series, and families distlock does not write, are
// left as they are.
func merge(fams map[string]*dto.MetricFamily, r Run) {
	prev := takeKey(fams, r.Key)
	set := func(name string, v float64, outcome ...Outcome) {
		add(fams, name, sample(r.Key, families[name].typ, v, outcome...))
	}
	set(mStart, seconds(r.Start))
	set(mEnd, seconds(r.End))
	set(mDuration, r.End.Sub(r.Start).Seconds())
	set(mWait, r.Wait.Seconds())
	set(mExit, float64(r.ExitCode))
	if r.Outcome == OK || r.Outcome == Failed {
		set(mCommandExit, float64(r.CommandExit))
	}
	if r.Outcome == OK {
		set(mSuccess, seconds(r.End))
	} else {
		add(fams, mSuccess, prev[mSuccess]...)
	}
	for _, o := range Outcomes {
		set(mOutcome, oneIf(o == r.Outcome), o)
	}
	counts := map[Outcome]float64{}
	for _, m := range prev[mRuns] {
		o := Outcome(label(m, "outcome"))
		if !slices.Contains(Outcomes, o) {
			add(fams, mRuns, m) // an older distlock's "ran", kept as it is
			continue
		}
		counts[o] = m.GetCounter().GetValue()
	}
	for _, o := range Outcomes {
		set(mRuns, counts[o]+oneIf(o == r.Outcome), o)
	}
	for name := range families {
		if f := fams[name]; f != nil {
			slices.SortStableFunc(f.Metric, byKeyOutcome)
		}
	}
}

// takeKey removes key's series from distlock's families in fams and
// returns them by family name.
func takeKey(fams map[string]*dto.MetricFamily, key string) map[string][]*dto.Metric {
	taken := map[string][]*dto.Metric{}
	for name := range families {
		f := fams[name]
		if f == nil {
			continue
		}
		f.Metric = slices.DeleteFunc(f.Metric, func(m *dto.Metric) bool {
			if label(m, "key") != key {
				return false
			}
			taken[name] = append(taken[name], m)
			return true
		})
	}
	return taken
}

// add appends ms to distlock's family name in fams, creating it if need
// be, with distlock's HELP text and type.
func add(fams map[string]*dto.MetricFamily, name string, ms ...*dto.Metric) {
	if len(ms) == 0 {
		return
	}
	f := fams[name]
	if f == nil {
		f = &dto.MetricFamily{Name: new(name)}
		fams[name] = f
	}
	def := families[name]
	f.Help, f.Type = new(def.help), new(def.typ)
	f.Metric = append(f.Metric, ms...)
}

// sample is one series of key (and outcome, if given) with value v.
func sample(key string, typ dto.MetricType, v float64, outcome ...Outcome) *dto.Metric {
	m := &dto.Metric{Label: []*dto.LabelPair{{Name: new("key"), Value: new(key)}}}
	for _, o := range outcome {
		m.Label = append(m.Label, &dto.LabelPair{Name: new("outcome"), Value: new(string(o))})
	}
	if typ == dto.MetricType_COUNTER {
		m.Counter = &dto.Counter{Value: new(v)}
	} else {
		m.Gauge = &dto.Gauge{Value: new(v)}
	}
	return m
}

// label is m's value of the label name ("" if it has none).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func byKeyOutcome(a, b *dto.Metric) int {
	return cmp.Or(cmp.Compare(label(a, "key"), label(b, "key")), cmp.Compare(label(a, "outcome"), label(b, "outcome")))
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
