package main

import (
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// etcdCounter counts the gRPC messages etcd received (its /metrics); the
// streams opened are counted apart (see main.go's file comment).
type etcdCounter struct{ addr string }

func (etcdCounter) what() string {
	return "gRPC messages etcd received (grpc_server_msg_received_total: one per unary call, one per stream message; a KeepAliveOnce is 1 request on 1 stream); streams opened (grpc_server_started_total of stream methods) counted apart"
}

// etcdMetrics is messages received and streams started, by method.
type etcdMetrics struct {
	received map[string]float64
	streams  map[string]float64
}

func (c etcdCounter) begin() (window, error) { return beginDiff(c.scrape, etcdCount) }

// etcdCount is what etcd received between two scrapes.
func etcdCount(before, after etcdMetrics) Count {
	c := Count{ByCommand: map[string]int64{}}
	for method, v := range after.received {
		if d := int64(v - before.received[method]); d > 0 {
			c.Requests += d
			c.ByCommand[method] = d
		}
	}
	for method, v := range after.streams {
		if d := int64(v - before.streams[method]); d > 0 {
			c.Streams += d
		}
	}
	return c
}

var metricsClient = &http.Client{Timeout: 10 * time.Second}

func (c etcdCounter) scrape() (etcdMetrics, error) {
	resp, err := metricsClient.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return etcdMetrics{}, err
	}
	defer resp.Body.Close()
	return parseEtcdMetrics(resp.Body)
}

// parseEtcdMetrics reads the gRPC counters of etcd's /metrics with
// Prometheus's own text parser.
func parseEtcdMetrics(r io.Reader) (etcdMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return etcdMetrics{}, fmt.Errorf("etcd metrics: %w", err)
	}
	var want []*dto.MetricFamily
	for _, name := range []string{"grpc_server_msg_received_total", "grpc_server_started_total"} {
		if f := fams[name]; f != nil {
			want = append(want, f)
		}
	}
	samples, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, want...)
	if err != nil {
		return etcdMetrics{}, fmt.Errorf("etcd metrics: %w", err)
	}
	m := etcdMetrics{received: map[string]float64{}, streams: map[string]float64{}}
	for _, s := range samples {
		method, v := string(s.Metric["grpc_method"]), float64(s.Value)
		switch {
		case s.Metric[model.MetricNameLabel] == "grpc_server_msg_received_total":
			m.received[method] += v
		case s.Metric["grpc_type"] != "unary":
			m.streams[method] += v
		}
	}
	return m, nil
}
