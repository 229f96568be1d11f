package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// printScale writes the scale mode's tables in Markdown, as the README
// shows them.
func printScale(w io.Writer, r *ScaleResults) {
	fmt.Fprintf(w, "distlock scale — %s; load average %s; took %s\n", r.Machine, strings.Join(r.LoadAvg, " → "), r.Took)
	fmt.Fprintf(w, "build: %s\n", r.Build)
	var limits []string
	for _, k := range slices.Sorted(maps.Keys(r.Limits)) {
		limits = append(limits, k+" "+r.Limits[k])
	}
	fmt.Fprintf(w, "servers with their default limits: %s\n\n", orDash(strings.Join(limits, "; ")))
	printHolders(w, r)
	fmt.Fprintln(w)
	printQueues(w, r)
	fmt.Fprintln(w, "\nengine requests counted:")
	for _, e := range r.order {
		fmt.Fprintf(w, "  %s: %s\n", e, r.Counted[e])
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func printHolders(w io.Writer, r *ScaleResults) {
	fmt.Fprintf(w, "Many holders (`distlock run --ttl %s`, distinct keys, launched at once; idle figures per holder)\n\n", trim(scaleTTLSeconds(r))+"s")
	fmt.Fprintln(w, "| engine | holders | all acquired, exit 0 | to last acquired s | private MB (of it dirty) | renewals per ttl/3 | requests/s | CPU s/hour | server CPU % |")
	fmt.Fprintln(w, "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, e := range r.order {
		for _, h := range r.Holders[e] {
			ok := "yes"
			if !h.AllOK {
				ok = fmt.Sprintf("no: %d of %d failed; first: %s", h.Failed, h.Holders, clip(h.FirstError, 160))
			}
			req, srv := "-", "-"
			if h.ReqPerSec != nil {
				req = fmt.Sprintf("%.2f", *h.ReqPerSec)
			} else if h.NotCounted != "" {
				req = "not counted: " + clip(h.NotCounted, 60)
			}
			if h.ServerCPU != nil {
				srv = fmt.Sprintf("%.1f", *h.ServerCPU)
			}
			fmt.Fprintf(w, "| %s | %d | %s | %.1f | %.2f (%.2f) | %.2f | %s | %.2f | %s |\n",
				e, h.Holders, ok, h.RampSeconds, h.PrivateMB, h.DirtyMB, h.RenewalsPerTTL3, req, h.CPUSecPerHour, srv)
		}
	}
}

func printQueues(w io.Writer, r *ScaleResults) {
	fmt.Fprintln(w, "Long queues (N contenders on one key, short sections in a row; handover = one child's end to the next one's start)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| tool | waiters × sections | handover p50 / p99 ms | settled p50 / p99 ms | requests per waiter per handover | sections/s |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, t := range r.tools {
		for _, q := range r.Queues[t] {
			if q.Error != "" {
				fmt.Fprintf(w, "| %s | %d × %d | failed: %s | | | |\n", t, q.Waiters, q.Sections, clip(q.Error, 160))
				continue
			}
			req := "-"
			if q.Counted {
				req = fmt.Sprintf("%.2f", q.ReqPerWaiterPerHandover)
			}
			fmt.Fprintf(w, "| %s | %d × %d | %.1f / %.1f | %.1f / %.1f | %s | %.1f |\n",
				t, q.Waiters, q.Sections, q.P50ms, q.P99ms, q.SettledP50ms, q.SettledP99ms, req, q.PerSecond)
		}
	}
	fmt.Fprintln(w, "\n(settled: from the handover after as many sections as contenders on, past the start of every contender at once)")
}

func scaleTTLSeconds(r *ScaleResults) float64 {
	for _, hs := range r.Holders {
		for _, h := range hs {
			return h.TTLSeconds
		}
	}
	return scaleTTL.Seconds()
}

// clip cuts s to n bytes and makes it fit in a Markdown table cell.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
