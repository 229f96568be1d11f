package main

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return etcdMetrics{}, err
	}
	m := etcdMetrics{received: map[string]float64{}, streams: map[string]float64{}}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "grpc_server_msg_received_total" && name != "grpc_server_started_total") {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return etcdMetrics{}, fmt.Errorf("etcd metrics: %q", line)
		}
		method, typ := label(labels, "grpc_method"), label(labels, "grpc_type")
		switch {
		case name == "grpc_server_msg_received_total":
			m.received[method] += v
		case typ != "unary":
			m.streams[method] += v
		}
	}
	return m, nil
}

// label is a Prometheus label's value in `a="x",b="y"`.
func label(labels, name string) string {
	_, v, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}
