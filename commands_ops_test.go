package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"
)

// rediscmd ARGS...: send one command to the Redis server itself
// (DISTLOCK_DIRECT_BACKEND, not through the fault proxy) and write its
// reply to stdout. Only valid on Redis: guard it with [engine:redis].
func cmdRedisCmd(ts *testscript.TestScript, neg bool, args []string) {
	raw := ts.Getenv("DISTLOCK_DIRECT_BACKEND")
	if neg || len(args) == 0 || !strings.HasPrefix(raw, "redis://") {
		ts.Fatalf("usage: [engine:redis] rediscmd ARGS...")
	}
	opts, err := goredis.ParseURL(raw)
	ts.Check(err)
	c := goredis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := make([]any, len(args))
	for i, a := range args {
		cmd[i] = a
	}
	res, err := c.Do(ctx, cmd...).Result()
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), res)
}

// doctorjson FILE [CHECK...]: FILE (stdout, say) is what `doctor -o json`
// prints: one JSON array of objects with exactly check, status, detail and
// fix, every status ok, warning or problem, a fix on every check that is
// not ok. Every CHECK named must be among them.
func cmdDoctorJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: doctorjson FILE [CHECK...]")
	}
	type check struct {
		Check  *string `json:"check"`
		Status *string `json:"status"`
		Detail *string `json:"detail"`
		Fix    *string `json:"fix"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(ts.ReadFile(args[0]))))
	dec.DisallowUnknownFields()
	var checks []check
	if err := dec.Decode(&checks); err != nil {
		ts.Fatalf("%s is not doctor's JSON: %v", args[0], err)
	}
	if dec.More() {
		ts.Fatalf("%s holds more than one JSON value", args[0])
	}
	seen := map[string]bool{}
	for i, c := range checks {
		if c.Check == nil || c.Status == nil || c.Detail == nil || c.Fix == nil {
			ts.Fatalf("check %d lacks a field: %+v", i, c)
		}
		switch *c.Status {
		case "ok":
		case "warning", "problem":
			if *c.Fix == "" {
				ts.Fatalf("check %s is %s with no fix", *c.Check, *c.Status)
			}
		default:
			ts.Fatalf("check %s has status %q", *c.Check, *c.Status)
		}
		if *c.Check == "" || *c.Detail == "" {
			ts.Fatalf("check %d has an empty name or detail", i)
		}
		seen[*c.Check] = true
	}
	for _, want := range args[1:] {
		if !seen[want] {
			ts.Fatalf("no %s check in %s", want, args[0])
		}
	}
}

// promcheck FILE: FILE must parse with Prometheus's own text-format parser
// (expfmt, with the strict name rules node_exporter's textfile collector
// applies); its samples are written to stdout, one per line and sorted, as
// name{label="value",...} value, for the script to match.
func cmdPromCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: promcheck FILE")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		ts.Fatalf("%s is not Prometheus text format: %v", args[0], err)
	}
	var lines []string
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			var v float64
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			default:
				ts.Fatalf("%s: %s is a %s; distlock writes gauges and counters", args[0], name, fam.GetType())
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %s", name, strings.Join(labels, ","), model.SampleValue(v)))
		}
	}
	slices.Sort(lines)
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}
