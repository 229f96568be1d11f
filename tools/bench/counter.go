package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// counter counts the requests an engine serves between a window's begin
// and its end (see the file comment of main.go for what a request is on
// each engine).
type counter interface {
	begin() (window, error)
	what() string // what is counted, for the JSON and the table
}

// window is an open count; end closes it.
type window interface {
	end() (Count, error)
}

// diffWindow is a window opened on a reading of a server's figures: end
// reads them again, and count makes the window's Count of the two readings.
type diffWindow[S any] struct {
	read   func() (S, error)
	count  func(before, after S) Count
	before S
}

// beginDiff opens a diffWindow on read's first reading.
func beginDiff[S any](read func() (S, error), count func(before, after S) Count) (window, error) {
	before, err := read()
	if err != nil {
		return nil, err
	}
	return &diffWindow[S]{read, count, before}, nil
}

func (w *diffWindow[S]) end() (Count, error) {
	after, err := w.read()
	if err != nil {
		return Count{}, err
	}
	return w.count(w.before, after), nil
}

// Count is the requests an engine served in a window.
type Count struct {
	Requests  int64            `json:"requests"`
	Streams   int64            `json:"streams_opened,omitempty"`     // etcd: gRPC streams opened (not requests)
	Clients   int              `json:"client_connections,omitempty"` // redis: client connections that sent a request
	ByCommand map[string]int64 `json:"by_command,omitempty"`
	// Connections (redis) is how many client connections sent each
	// sequence of commands, e.g. "hello, ping, evalsha ×3": who made what.
	Connections map[string]int `json:"connections_by_commands,omitempty"`
	Mismatch    string         `json:"mismatch,omitempty"` // a cross-check that failed: the count may be short
}

// breakdown is c's requests by command, each divided by per, largest first.
func (c Count) breakdown(per int) string {
	keys := slices.Collect(maps.Keys(c.ByCommand))
	slices.SortFunc(keys, func(a, b string) int {
		if d := c.ByCommand[b] - c.ByCommand[a]; d != 0 {
			return int(d)
		}
		return strings.Compare(a, b)
	})
	var parts []string
	if len(keys) == 0 && c.Requests > 0 {
		parts = append(parts, "requests "+trim(float64(c.Requests)/float64(per)))
	}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, trim(float64(c.ByCommand[k])/float64(per))))
	}
	if c.Streams > 0 {
		parts = append(parts, fmt.Sprintf("(+ streams opened %s)", trim(float64(c.Streams)/float64(per))))
	}
	if c.Clients > 0 {
		parts = append(parts, fmt.Sprintf("(connections %s)", trim(float64(c.Clients)/float64(per))))
	}
	return strings.Join(parts, ", ")
}

// trim formats f with up to two decimals and no trailing zeros.
func trim(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
